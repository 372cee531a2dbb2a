#!/usr/bin/env bash
# Packages an already built sfn-local binary for each way it ships; the release workflow
# (.github/workflows/release.yml) and the tests (tests/packaging.rs) run the same commands.
#
#   scripts/dist.sh archive  TARGET BIN OUT   sfn-local-TARGET.tar.gz (.zip for Windows)
#   scripts/dist.sh npm      TARGET BIN OUT   the npm package of one platform: @sfn-local/OS-CPU
#   scripts/dist.sh npm-launcher OUT          the npm package `sfn-local` (launcher, helpers)
#   scripts/dist.sh wheel    TARGET_DIR PROFILE OUT
#                                             the wheel, by maturin, of the binary cargo built in
#                                             TARGET_DIR with PROFILE (cargo finds it fresh and
#                                             only packages it; a release build compiles)
#   scripts/dist.sh wheel-from-binary BIN OUT the same wheel around a binary already built: maturin
#                                             writes the metadata (from pyproject.toml, no build),
#                                             this script packs it with python/sfn_local and BIN
#   scripts/dist.sh checksums OUT             SHA256SUMS of every file in OUT
#
# TARGET is a Rust target triple (x86_64-unknown-linux-musl, aarch64-apple-darwin, ...). The
# version is the crate's, from Cargo.toml.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

die() { echo "scripts/dist.sh: $*" >&2; exit 2; }

# Python 3 is `python` on Windows runners.
py() { if command -v python3 >/dev/null 2>&1; then python3 "$@"; else python "$@"; fi; }

version() { sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1; }

# npm's os and cpu names of a Rust target triple.
npm_platform() {
  local os cpu
  case "$1" in
    *-linux-*) os=linux ;;
    *-apple-darwin) os=darwin ;;
    *-windows-*) os=win32 ;;
    *) die "no npm platform for target $1" ;;
  esac
  case "$1" in
    x86_64-*) cpu=x64 ;;
    aarch64-*) cpu=arm64 ;;
    *) die "no npm cpu for target $1" ;;
  esac
  echo "$os $cpu"
}

exe_name() { case "$1" in *-windows-*) echo sfn-local.exe ;; *) echo sfn-local ;; esac; }

# Every platform the release builds, for the launcher's optionalDependencies.
platforms() { printf '%s\n' linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64; }

archive() {
  local target="$1" bin="$2" out="$3" stage
  [ -f "$bin" ] || die "no binary at $bin"
  mkdir -p "$out"
  stage="$(mktemp -d)"
  mkdir "$stage/sfn-local-$target"
  cp "$bin" "$stage/sfn-local-$target/$(exe_name "$target")"
  cp "$root/README.md" "$stage/sfn-local-$target/"
  case "$target" in
    *-windows-*)
      (cd "$stage" && py -m zipfile -c "sfn-local-$target.zip" "sfn-local-$target/")
      mv "$stage/sfn-local-$target.zip" "$out/" ;;
    *)
      tar -C "$stage" -czf "$out/sfn-local-$target.tar.gz" "sfn-local-$target" ;;
  esac
  rm -rf "$stage"
}

# Fills a package.json template: the version, and for a platform package its name, os and cpu.
fill_package_json() {
  py - "$@" <<'PY'
import json, sys
path, version, platform = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
with open(path) as f:
    pkg = json.load(f)
pkg["version"] = version
if platform:
    os_, cpu = platform.split("-")
    pkg["name"] = f"@sfn-local/{platform}"
    pkg["description"] = pkg["description"].replace("PLATFORM", platform)
    pkg["os"], pkg["cpu"] = [os_], [cpu]
else:
    pkg["optionalDependencies"] = {f"@sfn-local/{p}": version for p in sys.stdin.read().split()}
with open(path, "w") as f:
    json.dump(pkg, f, indent=2)
    f.write("\n")
PY
}

npm_package() {
  local target="$1" bin="$2" out="$3" platform os cpu stage
  [ -f "$bin" ] || die "no binary at $bin"
  platform="$(npm_platform "$target")"
  read -r os cpu <<<"$platform"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  stage="$(mktemp -d)"
  cp "$root/npm/platform/package.json" "$stage/"
  fill_package_json "$stage/package.json" "$(version)" "$os-$cpu" </dev/null
  mkdir "$stage/bin"
  cp "$bin" "$stage/bin/$(exe_name "$target")"
  chmod 755 "$stage/bin/$(exe_name "$target")"
  (cd "$stage" && npm pack --silent --pack-destination "$out" >/dev/null)
  rm -rf "$stage"
}

npm_launcher() {
  local out="$1" stage
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  stage="$(mktemp -d)"
  cp -R "$root/npm/sfn-local/." "$stage/"
  platforms | fill_package_json "$stage/package.json" "$(version)"
  (cd "$stage" && npm pack --silent --pack-destination "$out" >/dev/null)
  rm -rf "$stage"
}

wheel() {
  local target_dir="$1" profile="$2" out="$3"
  local args=(build --locked --manifest-path "$root/Cargo.toml" --out "$out")
  if [ "$profile" = release ]; then args+=(--release); else args+=(--profile "$profile"); fi
  # A wheel built here is for this machine's glibc; the release workflow builds manylinux wheels
  # in maturin's own containers.
  [ "${SFN_LOCAL_WHEEL_COMPAT:-}" != "" ] && args+=(--compatibility "$SFN_LOCAL_WHEEL_COMPAT")
  CARGO_TARGET_DIR="$target_dir" "${MATURIN:-maturin}" "${args[@]}"
}

wheel_from_binary() {
  local bin="$1" out="$2" stage
  [ -f "$bin" ] || die "no binary at $bin"
  mkdir -p "$out"
  stage="$(mktemp -d)"
  local args=(pep517 write-dist-info --metadata-directory "$stage")
  [ "${SFN_LOCAL_WHEEL_COMPAT:-}" != "" ] && args+=(--compatibility "$SFN_LOCAL_WHEEL_COMPAT")
  (cd "$root" && "${MATURIN:-maturin}" "${args[@]}" >/dev/null)
  cp -R "$root/python/sfn_local" "$stage/"
  find "$stage/sfn_local" -name __pycache__ -prune -exec rm -rf {} +
  py - "$stage" "$bin" "$out" <<'PY'
import base64, hashlib, os, pathlib, shutil, sys, zipfile
stage, binary, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
dist_info = next(stage.glob("*.dist-info"))
name_version = dist_info.name[: -len(".dist-info")]
tags = [l.split(":", 1)[1].strip() for l in (dist_info / "WHEEL").read_text().splitlines() if l.startswith("Tag:")]
scripts = stage / f"{name_version}.data" / "scripts"
scripts.mkdir(parents=True)
exe = "sfn-local.exe" if binary.suffix == ".exe" else "sfn-local"
shutil.copy(binary, scripts / exe)
files = sorted(p for p in stage.rglob("*") if p.is_file())
record = dist_info / "RECORD"
lines = []
for p in files:
    data = p.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    lines.append(f"{p.relative_to(stage).as_posix()},sha256={digest},{len(data)}")
lines.append(f"{record.relative_to(stage).as_posix()},,")
record.write_text("\n".join(lines) + "\n")
wheel = out / f"{name_version}-{'.'.join(tags)}.whl"
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
    for p in files + [record]:
        info = zipfile.ZipInfo(p.relative_to(stage).as_posix(), (1980, 1, 1, 0, 0, 0))
        # A regular file (pip checks the type bits before it sets the executable bit).
        info.external_attr = (0o100755 if p.parent == scripts else 0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, p.read_bytes())
print(wheel)
PY
  rm -rf "$stage"
}

checksums() {
  local out="$1"
  (cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort \
    | xargs -r sha256sum > SHA256SUMS)
}

case "${1:-}" in
  archive) [ $# -eq 4 ] || die "usage: archive TARGET BIN OUT"; archive "$2" "$3" "$4" ;;
  npm) [ $# -eq 4 ] || die "usage: npm TARGET BIN OUT"; npm_package "$2" "$3" "$4" ;;
  npm-launcher) [ $# -eq 2 ] || die "usage: npm-launcher OUT"; npm_launcher "$2" ;;
  wheel) [ $# -eq 4 ] || die "usage: wheel TARGET_DIR PROFILE OUT"; wheel "$2" "$3" "$4" ;;
  wheel-from-binary) [ $# -eq 3 ] || die "usage: wheel-from-binary BIN OUT"; wheel_from_binary "$2" "$3" ;;
  checksums) [ $# -eq 2 ] || die "usage: checksums OUT"; checksums "$2" ;;
  *) die "usage: scripts/dist.sh archive|npm|npm-launcher|wheel|wheel-from-binary|checksums ... (see the script's head)" ;;
esac
