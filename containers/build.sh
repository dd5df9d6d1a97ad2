#!/usr/bin/env bash
# Build the EDM-ARS OCI image with podman from a Debian base made locally by mmdebstrap (no image
# registry), then run the workflow inside it with the network off and check its output.
#
#   bash containers/build.sh [--slim] [--target FILE] [--configfile FILE|none] [--no-run]
#                            [--rebuild-base] [--keep-output] [--check]
#
#   (default)       full image (TeX Live with acmart), runs the small test configuration to
#                   output/paper.pdf
#   --slim          image without TeX Live; runs up to output/round_0/data/data_report.json
#   --target FILE   another target of the workflow (a path relative to the run directory)
#   --configfile F  the run's extra config file, relative to the checkout (default
#                   tests/workflow_config.yaml, a small study; "none" for config/config.yaml alone)
#   --no-run        build only
#   --rebuild-base  make the mmdebstrap base again even if the image exists
#   --keep-output   keep the run directory (its path is printed)
#   --check         only check that .ci/setup, edm-ars.def and the Containerfile list the same
#                   TeX Live packages (no root, no podman; for CI)
#
# Environment: EDM_ARS_MIRROR (a Debian mirror URL or a sources file; default: the host's bookworm
# sources), EDM_ARS_BASE_IMAGE, EDM_ARS_IMAGE, EDM_ARS_OCI_RUNTIME (crun or runc; default: the
# first that runs a container here), EDM_ARS_STORAGE_DRIVER (e.g. vfs where overlay fails),
# EDM_ARS_STATE (scratch folder, default /var/tmp/edm-ars-container), EDM_ARS_CORES.
#
# Needs root (or passwordless sudo): it installs podman, runc and mmdebstrap with apt-get when they
# are missing, and uses rootful podman. Exit 0 with "container: skipped: <reason>" where the machine
# cannot run containers; non-zero when the image does not build or the run fails.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ARGS=("$@")

SLIM=0 TARGET="" RUN=1 REBUILD_BASE=0 KEEP=0 CHECK=0 CONFIGFILE=tests/workflow_config.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --slim) SLIM=1 ;;
    --target) TARGET="$2"; shift ;;
    --configfile) CONFIGFILE="$2"; shift ;;
    --check) CHECK=1 ;;
    --no-run) RUN=0 ;;
    --rebuild-base) REBUILD_BASE=1 ;;
    --keep-output) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "container: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

skip() { echo "container: skipped: $*"; exit 0; }
fail() { echo "container: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

BASE_IMAGE="${EDM_ARS_BASE_IMAGE:-localhost/edm-ars-base:bookworm}"
if [ "$SLIM" = 1 ]; then
  IMAGE="${EDM_ARS_IMAGE:-localhost/edm-ars:slim}"; WITH_TEX=0
  TARGET="${TARGET:-output/round_0/data/data_report.json}"
else
  IMAGE="${EDM_ARS_IMAGE:-localhost/edm-ars:latest}"; WITH_TEX=1
  TARGET="${TARGET:-output/paper.pdf}"
fi
STATE="${EDM_ARS_STATE:-/var/tmp/edm-ars-container}"
CORES="${EDM_ARS_CORES:-$(nproc)}"

# 1. The apt packages (TeX Live, bubblewrap for the sandbox) must be the same in .ci/setup, edm-ars.def and the Containerfile.
tex_list() { grep -oE '\b(texlive-[a-z-]+|latexmk|poppler-utils|bubblewrap)\b' "$1" | sort -u | paste -sd' ' -; }
ci_list="$(tex_list "$ROOT/.ci/setup")"
for f in containers/edm-ars.def containers/Containerfile; do
  [ "$(tex_list "$ROOT/$f")" = "$ci_list" ] || fail "the TeX Live packages of $f differ from .ci/setup: $(tex_list "$ROOT/$f") vs $ci_list"
done
if [ "$CHECK" = 1 ]; then echo "container: check ok (TeX Live list: $ci_list)"; exit 0; fi
[ "$CONFIGFILE" = none ] || [ -f "$ROOT/$CONFIGFILE" ] || fail "no config file $CONFIGFILE in $ROOT"

# 2. Root, then the tools (idempotent).
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then exec sudo -n -E bash "$0" "${ARGS[@]}"; fi
  skip "needs root or passwordless sudo (apt-get, mmdebstrap, rootful podman)"
fi
if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v runc >/dev/null; then
  command -v apt-get >/dev/null || skip "podman or mmdebstrap missing and no apt-get to install them"
  echo "container: installing podman, runc and mmdebstrap (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends podman runc mmdebstrap; } \
      >/tmp/edm-ars-container-apt.log 2>&1; then
    tail -n 5 /tmp/edm-ars-container-apt.log
    skip "apt-get could not install podman, runc and mmdebstrap"
  fi
fi

# Settings that make rootful podman work in a VM or sandbox, as command-line flags (the machine's
# containers.conf is left alone): cgroupfs (no systemd), events to a file (no journald), and limits
# no higher than this process's own (without CAP_SYS_RESOURCE podman's defaults, nofile=1048576
# and nproc=4194304, fail with "setrlimit: Operation not permitted").
PODMAN=(podman --cgroup-manager=cgroupfs --events-backend=file)
[ -n "${EDM_ARS_STORAGE_DRIVER:-}" ] && PODMAN+=(--storage-driver="$EDM_ARS_STORAGE_DRIVER")
hard() { local v; v="$(ulimit -H "$1")"; [ "$v" = unlimited ] && v="$2"; [ "$v" -gt "$2" ] && v="$2"; echo "$v"; }
LIMITS=(--ulimit "nofile=$(hard -n 1048576):$(hard -n 1048576)" --ulimit "nproc=$(hard -u 32768):$(hard -u 32768)")

mkdir -p "$STATE"
echo "container: state in $STATE; podman $(podman --version | awk '{print $3}'), $(mmdebstrap --version)"

# 3. The base: Debian bookworm (minbase) from the host's mirror, imported as a local image.
t0=$(now); base_time="cached"
if [ "$REBUILD_BASE" = 1 ] || ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  sources=()
  if [ -n "${EDM_ARS_MIRROR:-}" ]; then
    sources=("$EDM_ARS_MIRROR")
  else
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && grep -qE '^[^#]*\bbookworm\b' "$f" && grep -qE '^[^#]*debian' "$f" && sources+=("$f")
    done
    [ ${#sources[@]} -gt 0 ] || sources=("http://deb.debian.org/debian")
  fi
  echo "container: making the base with mmdebstrap from ${sources[*]}"
  rm -f "$STATE/base.tar"
  if ! mmdebstrap --mode=root --variant=minbase --include=ca-certificates bookworm "$STATE/base.tar" \
      "${sources[@]}" >"$STATE/mmdebstrap.log" 2>&1; then
    tail -n 15 "$STATE/mmdebstrap.log"
    fail "mmdebstrap could not make the base (log: $STATE/mmdebstrap.log)"
  fi
  "${PODMAN[@]}" import --change 'CMD ["/bin/bash"]' \
    --message "Debian bookworm minbase made by mmdebstrap from ${sources[*]}" \
    "$STATE/base.tar" "$BASE_IMAGE" >"$STATE/import.log" 2>&1 || fail "podman import of the base failed (log: $STATE/import.log)"
  rm -f "$STATE/base.tar"
  base_time="$(secs "$t0" "$(now)") s"
fi

# 4. Can this machine run a container at all? Try the OCI runtimes (crun refuses a hybrid cgroup
# hierarchy with controllers on cgroup v2; runc accepts it).
probe_err=""
for rt in ${EDM_ARS_OCI_RUNTIME:-crun runc}; do
  command -v "$rt" >/dev/null || continue
  if err="$("${PODMAN[@]}" --runtime "$rt" run --rm --network none "${LIMITS[@]}" "$BASE_IMAGE" true 2>&1)"; then
    PODMAN+=(--runtime "$rt"); probe_err=""; break
  fi
  probe_err="$probe_err $rt: $(echo "$err" | tail -n 1);"
done
[ -z "$probe_err" ] || skip "podman cannot run a container here:$probe_err"
echo "container: podman runs containers here with ${PODMAN[*]:1} ${LIMITS[*]}"

# 5. The image, from a small build context (the files the Containerfile copies).
ctx="$(mktemp -d "$STATE/context.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
cp "$ROOT/pyproject.toml" "$ROOT/README.md" "$ROOT/containers/Containerfile" "$ctx/"
tar -C "$ROOT" --exclude=__pycache__ --exclude='*.pyc' -cf - scripts | tar -C "$ctx" -xf -
ca=()
ca_file="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$ca_file" ] && ca=(--volume "$ca_file:/run/host-ca/ca.crt:ro")
echo "container: building $IMAGE (WITH_TEX=$WITH_TEX)"
t0=$(now)
if ! "${PODMAN[@]}" build --layers --network host "${LIMITS[@]}" "${ca[@]}" \
    --build-arg BASE="$BASE_IMAGE" --build-arg WITH_TEX="$WITH_TEX" \
    -f "$ctx/Containerfile" -t "$IMAGE" "$ctx" >"$STATE/build.log" 2>&1; then
  tail -n 25 "$STATE/build.log"
  fail "podman build failed (log: $STATE/build.log)"
fi
image_time="$(secs "$t0" "$(now)") s"
size="$("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%.2f GB", $1 / 1e9 }')"

# 6. The workflow inside, network off: the checkout read-only at /src, a fresh run folder at /out.
run_time="not run"
if [ "$RUN" = 1 ]; then
  out="$(mktemp -d "$STATE/run.XXXXXX")"
  [ "$KEEP" = 1 ] || trap 'rm -rf "$ctx" "$out"' EXIT
  config=(); [ "$CONFIGFILE" = none ] || config=(--configfile "/src/$CONFIGFILE")
  echo "container: running snakemake $TARGET inside $IMAGE (--network none, ${CONFIGFILE})"
  t0=$(now)
  if ! "${PODMAN[@]}" run --rm --network none "${LIMITS[@]}" \
      --volume "$ROOT:/src:ro" --volume "$out:/out" --workdir /out "$IMAGE" \
      snakemake --snakefile /src/Snakefile --directory /out --cores "$CORES" "$TARGET" "${config[@]}" \
      >"$STATE/run.log" 2>&1; then
    tail -n 30 "$STATE/run.log"
    fail "the workflow failed inside the container (log: $STATE/run.log)"
  fi
  run_time="$(secs "$t0" "$(now)") s"
  [ -s "$out/$TARGET" ] || fail "$TARGET is missing after the run (log: $STATE/run.log)"
  echo "container: made $TARGET ($(stat -c %s "$out/$TARGET") bytes)$([ "$KEEP" = 1 ] && echo " in $out")"
fi

echo "container: base $base_time, image $image_time ($IMAGE, $size), run $run_time"
echo "container: ok"
