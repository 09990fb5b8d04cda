#!/usr/bin/env bash
# Builds docker/Dockerfile and runs the pcap demo in it, without a Docker
# engine or a registry: Debian 12 is made by debootstrap from Debian's
# mirror, imported into podman as debian:12 and debian:12-slim (the
# Dockerfile's two bases), then `podman build` and `podman run`. As root,
# from the repository root:
#   bash docker/podman.sh [ROOTFS_DIR]
# Needs: podman, debootstrap (Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."

rootfs=${1:-/var/tmp/int-node-debian12-rootfs}
if ! podman image exists docker.io/library/debian:12; then
    if [[ ! -x "$rootfs/bin/bash" ]]; then
        echo "podman.sh: debootstrap bookworm into $rootfs"
        debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
    fi
    echo "podman.sh: importing $rootfs as debian:12 and debian:12-slim"
    tar -C "$rootfs" -c . | podman import - docker.io/library/debian:12
    podman tag docker.io/library/debian:12 docker.io/library/debian:12-slim
fi

podman build --pull=never --isolation=chroot -f docker/Dockerfile -t int-node .
data=$(mktemp -d)
podman run --rm -v "$data:/data" int-node
ls -l "$data"
if cmp -s "$data/in.pcap" "$data/out.pcap"; then
    echo "podman.sh: the demo in the image restored every byte ($data/out.pcap == $data/in.pcap)"
else
    echo "podman.sh: $data/out.pcap differs from $data/in.pcap" >&2
    exit 1
fi
