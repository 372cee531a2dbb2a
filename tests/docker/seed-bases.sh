#!/usr/bin/env bash
# Seeds the base image the Dockerfile's runtime stage names (debian:bookworm-slim) from Debian's own
# packages, for machines that cannot pull from a registry: debootstrap --variant=minbase bookworm,
# then `docker import`. Skipped when the tag exists (a pulled image or an earlier seed), so it costs
# about a minute once per machine and nothing after. Needs root, debootstrap and a running dockerd.
set -euo pipefail
tag="${1:-debian:bookworm-slim}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if docker image inspect "$tag" >/dev/null 2>&1; then
  exit 0
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
# What debian:bookworm-slim leaves out: documentation, man pages and the apt lists.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
tar -C "$root" -c . | docker import \
  --change 'CMD ["bash"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  - "$tag" >/dev/null
