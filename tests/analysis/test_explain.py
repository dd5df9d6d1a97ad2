"""SHAP explanations: shapes, explainer choice, additivity, grouping to source variables, figures."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import shap
import xgboost as xgb
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from test_figures import assert_whole_or_cut_by_the_rule

from edm_ars.analysis.explain import ExplainSkipped, as_matrix, grouped, shap_values, top_features
from edm_ars.analysis.explain_figures import (
    LABEL_LINES,
    LABEL_WIDTH,
    importance_figure,
    importance_plot,
    summary_figure,
    summary_plot,
)
from edm_ars.analysis.figures import ELLIPSIS, texts_outside

BINARY = "binary_classification"
LEVELS = ["Complete_a_Bachelor_s_degree", "High_school_or_less", "Don_t_know"]
GROUP = "X1STUEDEXPCT"


@pytest.fixture(scope="module")
def data():
    """2,000 students, 10 encoded columns: two strong effects (+X1, -X2), a weak one, noise, a 3-level one-hot."""
    rng = np.random.default_rng(7)
    n = 2000
    X = pd.DataFrame({f"X{j}": rng.normal(size=n) for j in range(1, 8)})
    level = rng.choice(len(LEVELS), size=n, p=[0.5, 0.3, 0.2])
    for i, name in enumerate(LEVELS):
        X[f"{GROUP}__{name}"] = (level == i).astype(float)
    logit = 2.0 * X.X1 - 1.5 * X.X2 + 0.3 * X.X3 + 0.8 * X[f"{GROUP}__{LEVELS[0]}"] - 0.2
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    sources = {c: (GROUP if c.startswith(GROUP) else c) for c in X.columns}
    labels = {"X1": "Prior achievement", "X2": "Absences", GROUP: "Educational expectations"}
    return X, pd.Series(y, name="y"), sources, labels


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        models = {
            "xgboost": xgb.XGBClassifier(n_estimators=60, max_depth=3, learning_rate=0.1, tree_method="hist",
                                         n_jobs=1, random_state=0).fit(X, y),
            "random_forest": RandomForestClassifier(n_estimators=40, max_depth=6, min_samples_leaf=5, n_jobs=1,
                                                    random_state=0).fit(X, y),
            "logistic": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y),
            "elastic_net": make_pipeline(StandardScaler(), LogisticRegression(solver="saga", l1_ratio=0.5,
                                                                              max_iter=2000)).fit(X, y),
        }
    return models


# --- as_matrix ------------------------------------------------------------------------------------------------


def test_as_matrix_absorbs_shap_shapes():
    rng = np.random.default_rng(0)
    neg, pos = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    np.testing.assert_array_equal(as_matrix([neg, pos], 5, 3), pos)
    np.testing.assert_array_equal(as_matrix([pos], 5, 3), pos)
    np.testing.assert_array_equal(as_matrix(np.stack([neg, pos], axis=-1), 5, 3), pos)
    np.testing.assert_array_equal(as_matrix(np.stack([neg, pos], axis=0), 5, 3), pos)
    np.testing.assert_array_equal(as_matrix(pos, 5, 3), pos)
    np.testing.assert_array_equal(as_matrix(shap.Explanation(values=pos, base_values=np.zeros(5)), 5, 3), pos)
    three_d = shap.Explanation(values=np.stack([neg, pos], axis=-1), base_values=np.zeros((5, 2)))
    np.testing.assert_array_equal(as_matrix(three_d, 5, 3), pos)
    np.testing.assert_array_equal(as_matrix(pos[0], 1, 3), pos[:1])
    assert as_matrix(pos.astype(np.float32), 5, 3).dtype == np.float64


@pytest.mark.parametrize("bad", [np.zeros((5, 4)), np.zeros((4, 3)), np.zeros((5, 3, 3)), np.zeros(15),
                                 [np.zeros((5, 3)), np.zeros((5, 4))], [np.zeros((5, 3))] * 3, "abc"])
def test_as_matrix_rejects_bad_shapes(bad):
    with pytest.raises(ValueError, match=r"shape|cannot|arrays"):
        as_matrix(bad, 5, 3)


def test_as_matrix_error_names_the_shape():
    with pytest.raises(ValueError, match=r"\(5, 4\)"):
        as_matrix(np.zeros((5, 4)), 5, 3)


# --- tree models ----------------------------------------------------------------------------------------------


def test_xgboost_tree_shap_is_additive_in_the_margin(data, fitted):
    X, _, sources, _ = data
    model = fitted["xgboost"]
    values, rows, info = shap_values(model, "xgboost", BINARY, X, X, max_samples=500, seed=1)
    assert info["explainer"] == "TreeExplainer" and info["space"] == "log-odds"
    assert values.shape == (500, X.shape[1]) and rows.shape == (500, X.shape[1]) and info["n_explained"] == 500
    margin = model.predict(rows, output_margin=True)
    np.testing.assert_allclose(values.sum(axis=1) + info["expected_value"], margin, atol=1e-3)
    # and agrees with xgboost's own contributions (last column is the bias)
    contribs = model.get_booster().predict(xgb.DMatrix(rows), pred_contribs=True)
    np.testing.assert_allclose(values, contribs[:, :-1], atol=1e-3)
    top = top_features(values, rows, sources, k=3)
    assert {t["feature"] for t in top[:2]} == {"X1", "X2"}


def test_sample_is_seeded_subset_in_original_space(data, fitted):
    X, _, _, _ = data
    a = shap_values(fitted["xgboost"], "xgboost", BINARY, X, X, max_samples=300, seed=3)
    b = shap_values(fitted["xgboost"], "xgboost", BINARY, X, X, max_samples=300, seed=3)
    c = shap_values(fitted["xgboost"], "xgboost", BINARY, X, X, max_samples=300, seed=4)
    assert a[1].index.equals(b[1].index) and not a[1].index.equals(c[1].index)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1].index.is_monotonic_increasing
    pd.testing.assert_frame_equal(a[1], X.loc[a[1].index])


def test_random_forest_ranks_the_two_strong_features_first(data, fitted):
    X, _, sources, labels = data
    values, rows, info = shap_values(fitted["random_forest"], "random_forest", BINARY, X, X, max_samples=400)
    assert info["explainer"] == "TreeExplainer" and info["space"] == "probability"
    assert values.shape == (400, X.shape[1])
    prob = fitted["random_forest"].predict_proba(rows)[:, 1]
    np.testing.assert_allclose(values.sum(axis=1) + info["expected_value"], prob, atol=1e-6)
    top = top_features(values, rows, sources, labels)
    assert [t["feature"] for t in top[:2]] in (["X1", "X2"], ["X2", "X1"])


# --- linear pipelines -----------------------------------------------------------------------------------------


def test_linear_explainer_on_logistic_pipeline(data, fitted):
    X, _, sources, labels = data
    model = fitted["logistic"]
    values, rows, info = shap_values(model, "logistic", BINARY, X, X, max_samples=600)
    assert info["explainer"] == "LinearExplainer" and info["space"] == "log-odds"
    assert values.shape == (600, X.shape[1])
    # columns align 1:1 with the input: phi_ij = coef_j * (z_ij - mean background z_j)
    scaler, lr = model[0], model[-1]
    Z = scaler.transform(rows)
    np.testing.assert_allclose(values - values.mean(axis=0), lr.coef_[0] * (Z - Z.mean(axis=0)), atol=1e-9)
    # additivity in log-odds
    np.testing.assert_allclose(values.sum(axis=1) + info["expected_value"], model.decision_function(rows),
                               atol=1e-6)
    top = top_features(values, rows, sources, labels, k=5)
    assert top[0]["feature"] == "X1" and top[0]["label"] == "Prior achievement"
    assert int(np.argmax(np.abs(values).mean(axis=0))) == list(X.columns).index("X1")


def test_elastic_net_pipelines(data, fitted):
    X, y, _, _ = data
    values, _, info = shap_values(fitted["elastic_net"], "elastic_net", BINARY, X, X, max_samples=200)
    assert info["explainer"] == "LinearExplainer" and values.shape == (200, X.shape[1])
    outcome = 3 * X.X1 - X.X2 + np.random.default_rng(0).normal(size=len(X))
    reg = make_pipeline(StandardScaler(), ElasticNet(alpha=0.01)).fit(X, outcome)
    values, rows, info = shap_values(reg, "elastic_net", "regression", X, X, max_samples=200)
    assert info["space"] == "outcome units"
    np.testing.assert_allclose(values.sum(axis=1) + info["expected_value"], reg.predict(rows), atol=1e-6)
    assert top_features(values, rows, {})[0]["feature"] == "X1"


# --- grouping -------------------------------------------------------------------------------------------------


def test_top_features_sums_one_hot_groups_and_orders(data):
    X, _, sources, labels = data
    rows = X.iloc[:500]
    rng = np.random.default_rng(0)
    phi = rng.normal(scale=0.01, size=rows.shape)
    phi[:, 0] = 1.0 * (rows.X1 - rows.X1.mean())       # positive, strongest
    phi[:, 1] = -0.5 * (rows.X2 - rows.X2.mean())      # negative
    cols = [list(X.columns).index(f"{GROUP}__{name}") for name in LEVELS]
    # a category effect split over the group's columns: opposite signs per column, additive when summed
    phi[:, cols[0]] = 0.3 * rows[f"{GROUP}__{LEVELS[0]}"] - 0.15
    phi[:, cols[1]] = -0.2 * rows[f"{GROUP}__{LEVELS[1]}"] + 0.06
    phi[:, cols[2]] = 0.01
    top = top_features(phi, rows, sources, labels, k=4)
    assert [t["feature"] for t in top[:3]] == ["X1", "X2", GROUP]
    assert [t["mean_abs_shap"] for t in top] == sorted((t["mean_abs_shap"] for t in top), reverse=True)
    group = top[2]
    assert group["columns"] == [f"{GROUP}__{name}" for name in LEVELS]
    assert group["label"] == "Educational expectations"
    assert group["mean_abs_shap"] == pytest.approx(np.abs(phi[:, cols].sum(axis=1)).mean())
    assert group["direction"] == "mixed"
    assert top[0]["direction"] == "positive" and top[1]["direction"] == "negative"
    assert top[0]["label"] == "Prior achievement" and top[3]["label"] == top[3]["feature"]
    assert len(top_features(phi, rows, sources, k=100)) == X.shape[1] - len(LEVELS) + 1
    assert set(grouped(phi, rows, sources)) == {*(f"X{j}" for j in range(1, 8)), GROUP}


def test_directions_from_a_fitted_model(data, fitted):
    X, _, sources, labels = data
    values, rows, _ = shap_values(fitted["xgboost"], "xgboost", BINARY, X, X, max_samples=800)
    by = {t["feature"]: t for t in top_features(values, rows, sources, labels, k=20)}
    assert by["X1"]["direction"] == "positive" and by["X2"]["direction"] == "negative"
    noise = by["X7"]
    assert noise["mean_abs_shap"] < by["X1"]["mean_abs_shap"] / 5


def test_one_hot_group_agreeing_in_sign_has_that_direction():
    X = pd.DataFrame({"G__a": [1.0, 0, 0, 1, 0, 0] * 10, "G__b": [0.0, 1, 0, 0, 1, 0] * 10})
    phi = np.column_stack([0.5 * X.G__a - 0.1, 0.2 * X.G__b - 0.05])
    top = top_features(phi, X, {"G__a": "G", "G__b": "G"})
    assert top == [{"feature": "G", "label": "G", "mean_abs_shap": pytest.approx(np.abs(phi.sum(1)).mean()),
                    "direction": "positive", "columns": ["G__a", "G__b"]}]
    assert top_features(-phi, X, {"G__a": "G", "G__b": "G"})[0]["direction"] == "negative"
    # a U-shaped effect has no monotone direction
    x = np.linspace(-1, 1, 60)
    u = pd.DataFrame({"age": x})
    assert top_features((x**2 - 1 / 3).reshape(-1, 1), u, {})[0]["direction"] == "mixed"
    assert top_features(x.reshape(-1, 1), u, {})[0]["direction"] == "positive"


# --- model-agnostic, skips ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp(data):
    X, y, _, _ = data
    Xs = X[["X1", "X2", "X3", "X4", f"{GROUP}__{LEVELS[0]}", f"{GROUP}__{LEVELS[1]}"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(16,), max_iter=300,
                                                              random_state=0)).fit(Xs, y)
    return model, Xs


def test_mlp_kernel_explainer_within_budget(mlp):
    model, Xs = mlp
    values, rows, info = shap_values(model, "mlp", BINARY, Xs, Xs, kernel_samples=100, timeout_s=120,
                                     background_samples=20, seed=5)
    assert info["explainer"] in ("KernelExplainer", "PermutationExplainer")
    assert info["space"] == "probability" and info["n_explained"] == 100 and info["n_background"] == 20
    assert values.shape == (100, Xs.shape[1]) and len(rows) == 100
    assert "seconds" not in info  # timings go to the log, never into artifacts
    np.testing.assert_allclose(values.sum(axis=1) + info["expected_value"], model.predict_proba(rows)[:, 1],
                               atol=1e-6)
    assert int(np.argmax(np.abs(values).mean(axis=0))) == 0  # X1
    again, rows2, _ = shap_values(model, "mlp", BINARY, Xs, Xs, kernel_samples=100, timeout_s=120,
                                  background_samples=20, seed=5)
    assert rows2.index.equals(rows.index)
    np.testing.assert_allclose(again, values, atol=1e-12)


def test_mlp_timeout_skips(mlp):
    model, Xs = mlp
    with pytest.raises(ExplainSkipped, match="timeout") as err:
        shap_values(model, "mlp", BINARY, Xs, Xs, kernel_samples=100, timeout_s=0)
    assert "timeout" in err.value.reason


def test_unknown_families_are_explained_by_what_the_estimator_is(mlp):
    model, Xs = mlp
    y = (Xs.X1 > 0).astype(int)
    trees = ExtraTreesClassifier(n_estimators=10, max_depth=4, random_state=0).fit(Xs, y)
    assert shap_values(trees, "extra_trees", BINARY, Xs, Xs, max_samples=50)[2]["explainer"] == "TreeExplainer"
    linear = make_pipeline(StandardScaler(), Ridge()).fit(Xs, Xs.X1)
    assert shap_values(linear, "ridge", "regression", Xs, Xs, max_samples=50)[2]["explainer"] == "LinearExplainer"
    knn = KNeighborsClassifier(n_neighbors=15).fit(Xs, y)
    values, _, info = shap_values(knn, "knn", BINARY, Xs, Xs, kernel_samples=5, background_samples=10)
    assert info["explainer"] == "KernelExplainer" and values.shape == (5, Xs.shape[1])


def test_stacking_is_never_explained(data):
    X, _, _, _ = data
    with pytest.raises(ExplainSkipped) as err:
        shap_values(object(), "stacking", BINARY, X, X)
    assert err.value.reason == "SHAP is not computed for stacking"


# --- figures --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_figures_are_written_and_reproducible(data, fitted, tmp_path):
    X, _, sources, labels = data
    values, rows, _ = shap_values(fitted["xgboost"], "xgboost", BINARY, X, X, max_samples=500)
    top = top_features(values, rows, sources, labels, k=8)
    importance_figure(top, tmp_path / "a" / "importance.pdf", title="XGBoost")
    summary_figure(values, rows, sources, labels, tmp_path / "a" / "summary.pdf", k=8)
    importance_figure(top, tmp_path / "b" / "importance.pdf", title="XGBoost")
    summary_figure(values, rows, sources, labels, tmp_path / "b" / "summary.pdf", k=8)
    for name in ("importance.pdf", "summary.pdf"):
        first = (tmp_path / "a" / name).read_bytes()
        assert first.startswith(b"%PDF") and len(first) > 1000
        assert first == (tmp_path / "b" / name).read_bytes()


LONG_LABEL = ("X2 How far in school the sample member thinks he/she will get, asked again in the spring of the "
              "eleventh grade with a different wording")
HSLS_LABELS = ["X3 GPA for all academic courses", "X1 Socio-economic status composite",
               "X2 How far in school sample member thinks he/she will get",
               "X1 How far in school parent thinks 9th grader will go", "X3 Credits earned in: AP/IB mathematics courses",
               "X1 Parents'/guardians' highest level of education", "X1 Scale of student's school engagement",
               "X2 Mathematics standardized theta score", LONG_LABEL]


def test_shap_figures_keep_every_label_inside_and_whole():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(200, len(HSLS_LABELS))), columns=[f"V{i}" for i in range(len(HSLS_LABELS))])
    shap_matrix = X.to_numpy() * np.linspace(1.0, 0.1, X.shape[1])
    labels = dict(zip(X.columns, HSLS_LABELS, strict=True))
    top = top_features(shap_matrix, X, {c: c for c in X.columns}, labels, k=len(HSLS_LABELS))
    figs = {"importance": importance_plot(top, title="Logistic regression (L2) on the held-out students of the "
                                                         "school-grouped split"),
            "summary": summary_plot(shap_matrix, X, {c: c for c in X.columns}, labels, k=len(HSLS_LABELS))}
    for name, fig in figs.items():
        assert texts_outside(fig) == [], name
        ax = fig.axes[0]
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert len(ticks) == len(top)
        for shown, t in zip(ticks, reversed(top), strict=True):  # the largest at the top
            assert_whole_or_cut_by_the_rule(shown, t["label"], LABEL_WIDTH, LABEL_LINES)
            assert shown.endswith(ELLIPSIS) == (t["label"] == LONG_LABEL), shown  # only past three lines
    title = figs["importance"].axes[0].get_title()
    assert "\n" in title and not title.endswith(ELLIPSIS)
