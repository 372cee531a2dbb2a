#!/usr/bin/env bash
# The script part of the GitHub Action (action.yml): `install` puts sfn-local on PATH, from a
# release's archive (checksum verified against the release's SHA256SUMS) or from pip; `validate`
# runs `sfn-local validate --format github`, so problems are annotations on the pull request.
#
# Settings (action.yml passes its inputs): SFN_LOCAL_VERSION (a release tag such as v0.1.0, or
# `latest`), SFN_LOCAL_INSTALL (`binary` or `pip`), SFN_LOCAL_PATHS, SFN_LOCAL_ARGS;
# SFN_LOCAL_REPOSITORY (OWNER/REPO; default: read from the action's own path) and
# SFN_LOCAL_RELEASE_URL (where the release's files are; default: the repository's GitHub
# release). GitHub sets RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP and GITHUB_PATH.
set -euo pipefail

die() { echo "::error title=sfn-local::$*" >&2; exit 1; }

# The Rust target whose archive runs on this runner.
runner_target() {
  case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
    Linux/X64) echo x86_64-unknown-linux-musl ;;
    Linux/ARM64) echo aarch64-unknown-linux-musl ;;
    macOS/X64) echo x86_64-apple-darwin ;;
    macOS/ARM64) echo aarch64-apple-darwin ;;
    Windows/X64) echo x86_64-pc-windows-msvc ;;
    Windows/ARM64) echo aarch64-pc-windows-msvc ;;
    *) die "no sfn-local release for runner ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}: use install: pip" ;;
  esac
}

# OWNER/REPO of this action: GITHUB_ACTION_PATH is .../_actions/OWNER/REPO/REF.
repository() {
  if [ -n "${SFN_LOCAL_REPOSITORY:-}" ]; then echo "$SFN_LOCAL_REPOSITORY"; return; fi
  local path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: name SFN_LOCAL_REPOSITORY}"
  path="${path%/}"
  echo "$(basename "$(dirname "$(dirname "$path")")")/$(basename "$(dirname "$path")")"
}

release_url() {
  local version="${SFN_LOCAL_VERSION:-latest}"
  if [ -n "${SFN_LOCAL_RELEASE_URL:-}" ]; then echo "${SFN_LOCAL_RELEASE_URL%/}"
  elif [ "$version" = latest ]; then echo "https://github.com/$(repository)/releases/latest/download"
  else echo "https://github.com/$(repository)/releases/download/$version"
  fi
}

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }

install_binary() {
  local target archive url dir expected actual
  target="$(runner_target)"
  case "$target" in *-windows-*) archive="sfn-local-$target.zip" ;; *) archive="sfn-local-$target.tar.gz" ;; esac
  url="$(release_url)"
  dir="${RUNNER_TEMP:?}/sfn-local"
  rm -rf "$dir" && mkdir -p "$dir"
  curl -fsSL --retry 3 -o "$dir/$archive" "$url/$archive" || die "cannot download $url/$archive"
  curl -fsSL --retry 3 -o "$dir/SHA256SUMS" "$url/SHA256SUMS" || die "cannot download $url/SHA256SUMS"
  expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$dir/SHA256SUMS")"
  [ -n "$expected" ] || die "$archive is not listed in the release's SHA256SUMS"
  actual="$(sha256 "$dir/$archive")"
  [ "$expected" = "$actual" ] || die "$archive: checksum $actual does not match SHA256SUMS ($expected)"
  case "$archive" in
    *.zip) (cd "$dir" && { unzip -q "$archive" || tar -xf "$archive"; }) ;;
    *) tar -C "$dir" -xzf "$dir/$archive" ;;
  esac
  echo "$dir/sfn-local-$target" >> "${GITHUB_PATH:?}"
  echo "sfn-local: installed $archive ($actual) from $url"
}

install_pip() {
  local spec=sfn-local version="${SFN_LOCAL_VERSION:-latest}"
  [ "$version" = latest ] || spec="sfn-local==${version#v}"
  python3 -m pip install --disable-pip-version-check "$spec"
}

validate() {
  # The paths and flags are words, as on a command line.
  # shellcheck disable=SC2086
  sfn-local validate --format github ${SFN_LOCAL_ARGS:-} ${SFN_LOCAL_PATHS:-.}
}

case "${1:-}" in
  install)
    case "${SFN_LOCAL_INSTALL:-binary}" in
      binary) install_binary ;;
      pip) install_pip ;;
      *) die "install: ${SFN_LOCAL_INSTALL} is neither binary nor pip" ;;
    esac ;;
  validate) validate ;;
  *) die "usage: scripts/action.sh install|validate" ;;
esac
