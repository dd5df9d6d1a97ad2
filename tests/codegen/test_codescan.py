"""The rules of the static scan (edm_ars.codegen.codescan) that close the holes found by the hostile scripts of
issue 34: aliases of exec/eval, getattr & co. with a constant name reaching a module or a forbidden function, path
expressions built by method calls on clean literals, io.FileIO and friends, glob, writes into inputs/, and the
libraries' own downloaders. Each rule has scripts it refuses (naming the line) and legitimate scripts it still
accepts; the vetted library passes them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from edm_ars.codegen.codescan import scan

LIBRARY = Path(__file__).resolve().parents[2] / "scripts" / "edm_ars" / "codegen" / "library"


@pytest.mark.parametrize(("source", "expected"), [
    # aliases of exec/eval and the other forbidden builtins
    ("e = exec\ne('import os')\n", "line 1: use of exec (as a value) is not allowed"),
    ("run = [eval][0]\n", "line 1: use of eval (as a value) is not allowed"),
    ("values = list(map(eval, ['1']))\n", "line 1: use of eval (as a value) is not allowed"),
    ("import numpy as np\nf = getattr(np, 'exec')\n", "line 2: use of .exec is not allowed (given to getattr())"),
    ("import pandas as pd\nf = getattr(pd.io.common, 'os')\n",
     "line 2: access to the module os through an attribute is not allowed (given to getattr())"),
    ("import pandas as pd\nm = getattr(pd.io.common, 'o' 's')\ngetattr(m, 'system')('id')\n",
     "line 3: access to system through an attribute is not allowed (given to getattr())"),
    ("import numpy as np\nlib = getattr(np, 'ctypeslib')\n", "line 2: access to the module ctypeslib"),
    ("import numpy as np\nhasattr(np, '_private')\n", "line 2: hasattr() with a computed or private"),
    ("from operator import attrgetter\nget = attrgetter('io.common.os')\n",
     "line 2: access to the module os through an attribute is not allowed (given to attrgetter())"),
    ("from operator import methodcaller\ncall = methodcaller('system', 'id')\n",
     "line 2: access to system through an attribute is not allowed (given to methodcaller())"),
    ("from operator import attrgetter\nname = 'os'\nget = attrgetter(name)\n",
     "line 3: attrgetter() with a computed attribute name"),
])
def test_aliases_and_constant_attribute_names_are_refused(source, expected):
    violations = scan(source)
    assert any(v.startswith(expected) for v in violations), violations


@pytest.mark.parametrize(("source", "expected"), [
    # method calls on clean literals that turn them into other paths
    ("open('out/x'.replace('out/x', '/etc/passwd')).read()\n", "absolute path '/etc/passwd' given to open()"),
    ("p = 'out/x'.replace('out/x', '/etc/passwd')\nopen(p).read()\n",
     "line 2: the path given to open() is neither"),
    ("p = 'out/etc/passwd'.removeprefix('out')\nopen(p)\n", "line 2: the path given to open() is neither"),
    ("open('out/etc/passwd'[3:]).read()\n", "line 1: the path given to open() is neither"),
    ("open('out/{}'.format('../../etc/passwd'))\n", "climbs out with '..' given to open()"),
    ("from pathlib import Path\nPath('out').joinpath('..', '..', 'etc', 'passwd').read_text()\n",
     "line 2: path '..' climbs out with '..' given to .joinpath()"),
    ("from pathlib import Path\np = Path('out').joinpath('/etc/passwd')\n",
     "line 2: absolute path '/etc/passwd' given to .joinpath()"),
    ("from pathlib import Path\nPath('inputs').resolve().parent.joinpath('x').read_text()\n",
     "line 2: the path .read_text() is called on is neither"),
    ("a = 1\nopen(f'out/{a}/../../x', 'w')\n", "line 2: path '../../x' climbs out"),
    # io.FileIO and the other openers
    ("import io\nio.FileIO('/etc/passwd').read()\n", "line 2: absolute path '/etc/passwd' given to FileIO()"),
    ("import io\nio.open_code('/etc/passwd')\n", "absolute path '/etc/passwd' given to open_code()"),
    ("from io import FileIO\nname = str(1)\nFileIO(name).read()\n", "line 3: the path given to FileIO() is neither"),
    ("import gzip\ngzip.GzipFile('/root/x.gz')\n", "absolute path '/root/x.gz' given to GzipFile()"),
    ("import fileinput\n", "line 1: import of fileinput (the operating system)"),
    # glob
    ("import glob\nglob.glob('/etc/*')\n", "line 2: absolute path '/etc/*' given to glob()"),
    ("from glob import glob\nglob('../*')\n", "line 2: path '../*' climbs out with '..' given to glob()"),
    ("import glob\nglob.iglob('*')\n", "line 2: path '*' is outside the contract"),
    ("from pathlib import Path\nlist(Path('inputs').glob('../../*'))\n",
     "line 2: path '../../*' climbs out with '..' given to .glob()"),
    ("from pathlib import Path\nlist(Path('inputs').resolve().parent.rglob('*'))\n",
     "line 2: the folder given to .rglob() is neither"),
    ("from pathlib import Path\npattern = str(1)\nlist(Path('inputs').glob(pattern))\n",
     "line 3: the pattern given to .glob() must be a literal"),
    # writes into inputs/
    ("import pandas as pd\npd.DataFrame().to_csv('inputs/x.csv')\n", "line 2: writing into inputs/ with to_csv()"),
    ("from pathlib import Path\nPath('inputs/x.csv').write_text('x')\n", "line 2: writing into inputs/ with write_text()"),
    ("open('./inputs/x.csv', 'a').write('x')\n", "line 1: writing into inputs/ with open()"),
    ("import json\nm = json.load(open('inputs/manifest.json'))\nopen(m['x']['path'], 'w').write('x')\n",
     "line 3: writing into inputs/ with open()"),
    ("from pathlib import Path\nfolder = Path('inputs')\n(folder / 'new').mkdir()\n",
     "line 3: writing into inputs/ with mkdir()"),
    ("import numpy as np\nnp.save(file='inputs/x.npy', arr=np.zeros(2))\n", "line 2: writing into inputs/ with save()"),
    ("import matplotlib.pyplot as plt\nplt.savefig(f'inputs/{1}.png')\n", "line 2: writing into inputs/ with savefig()"),
    # the libraries' own downloaders
    ("from sklearn.datasets import fetch_openml\n", "line 1: import of fetch_openml from sklearn.datasets (downloads)"),
    ("import sklearn.datasets\nsklearn.datasets.fetch_california_housing()\n",
     "line 2: call of fetch_california_housing() (it downloads data) is not allowed"),
    ("import shap\nX, y = shap.datasets.adult()\n", "line 2: use of shap.datasets (downloads) is not allowed"),
    ("from shap.datasets import adult\n", "line 1: import of shap.datasets (downloads)"),
    ("from shap import datasets\n", "line 1: import of datasets from shap (downloads)"),
    ("import seaborn as sns\nsns.load_dataset('titanic')\n", "line 2: call of load_dataset() (it downloads data)"),
    ("import statsmodels.api as sm\nsm.datasets.get_rdataset('Guerry', 'HistData')\n",
     "line 2: call of get_rdataset() (it downloads data)"),
    ("import pooch\n", "line 1: import of pooch (downloads) is not allowed"),
    ("import urllib.request\n", "line 1: import of urllib.request (network)"),
])
def test_paths_openers_glob_inputs_writes_and_downloaders_are_refused(source, expected):
    violations = scan(source)
    assert any(expected in v for v in violations), violations


@pytest.mark.parametrize("source", [
    # names that shadow a forbidden builtin are ordinary variables; string methods away from paths are fine
    "vars = ['a', 'b']\nprint(vars)\n",
    "def summary(input):\n    return input\n",
    "import numpy as np\nmean = getattr(np, 'mean')\nhasattr(np, 'linalg')\n",
    "from operator import attrgetter, methodcaller\nget = attrgetter('coef_', 'intercept_')\n"
    "up = methodcaller('upper')\n",
    "label = 'a_b'.replace('_', ' ').title()\nwords = 'out of range'.split()\n",
    # paths built by joining onto a clean folder, f-strings with several parts, manifest data
    "from pathlib import Path\nPath('out').joinpath('figures', 'a.png').write_text('x')\n",
    "from pathlib import Path\np = Path('out/figures/a.pdf')\np.with_suffix('.png').write_bytes(b'')\n",
    "a, b = 1, 2\nopen(f'out/{a}/{b}.png', 'w').write('x')\n",
    "import json\nm = json.load(open('inputs/manifest.json'))\nfor name, e in m.items():\n    open(e['path']).read()\n"
    "    open(e.get('path')).read()\n",
    "from pathlib import Path\nfig = Path('out') / 'figures'\nfig.mkdir(parents=True, exist_ok=True)\n"
    "(fig / 'a.txt').write_text('x')\n",
    # reading inputs (also through io, gzip), listing them with glob
    "from pathlib import Path\nPath('inputs/x.csv').read_text()\nopen('inputs/x.csv', 'r').read()\n",
    "import io\nio.FileIO('inputs/x.csv').read()\nbuf = io.BytesIO()\n",
    "import gzip\ngzip.open('inputs/x.csv.gz', 'rt').read()\n",
    "import glob\nfor f in sorted(glob.glob('inputs/*.csv')):\n    open(f).read()\n",
    "from pathlib import Path\nfor f in sorted(Path('inputs').glob('*.csv')):\n    f.read_text()\n    open(f).read()\n"
    "for f in Path('out').iterdir():\n    f.unlink()\n",
    # a path under out/ that names an input, and local (bundled or synthetic) data sets
    "import json\nm = json.load(open('inputs/manifest.json'))\nopen('out/' + m['x']['path'], 'w').write('x')\n",
    "from sklearn.datasets import make_classification, load_iris\nX, y = make_classification(random_state=0)\n",
])
def test_legitimate_scripts_still_pass(source):
    assert scan(source) == []


def test_the_vetted_library_passes_every_rule():
    scripts = sorted(LIBRARY.glob("*.py"))
    assert len([s for s in scripts if s.name != "__init__.py"]) >= 3
    assert {s.name: scan(s.read_text(encoding="utf-8")) for s in scripts} == {s.name: [] for s in scripts}
