#!/usr/bin/env bash
# Builds docker/Dockerfile and runs the pcap demo in it, without a Docker
# engine or a registry: Debian 12 is made by debootstrap from Debian's
# mirror, imported into podman as debian:12 and debian:12-slim (the
# Dockerfile's two bases), then `podman build` and `podman run`. As root,
# from the repository root:
#   bash docker/podman.sh [--ca CA_FILE] [ROOTFS_DIR]
# --ca: the CA of a proxy that re-signs TLS on the way to static.rust-lang.org
# and crates.io; the build stage trusts it, the image does not keep it.
# Needs: podman, debootstrap, tcpdump, and runc where crun cannot run
# (Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."

secret=()
if [[ ${1:-} == --ca ]]; then
    [[ -s ${2:-} ]] || { echo "podman.sh: --ca needs a CA file (PEM)" >&2; exit 2; }
    secret=(--secret "id=extra_ca,src=$2")
    shift 2
fi
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

podman build --pull=never --isolation=chroot "${secret[@]}" -f docker/Dockerfile -t int-node .

# Where crun refuses (cgroup v1 and v2 mounted together: "cgroups in hybrid
# mode not supported"), runc runs the container. Podman runs its runtime
# with its own limits (at most 32768 processes, the caller's open files):
# asking for more, the default, fails without CAP_SYS_RESOURCE.
runtime=()
if command -v runc > /dev/null; then
    runtime=(--runtime runc)
fi
limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=32768:32768")
data=$(mktemp -d)
podman "${runtime[@]}" run --rm "${limits[@]}" -v "$data:/data" int-node
ls -l "$data"
# The sink's pcap is written with ns timestamps: compare the packets.
packets() { tcpdump -nn -t -xx -r "$1" 2> /dev/null; }
if cmp -s <(packets "$data/in.pcap") <(packets "$data/out.pcap"); then
    echo "podman.sh: the demo in the image restored every packet: $(packets "$data/out.pcap" | grep -c '^[^ 	]') packets of $data/out.pcap equal $data/in.pcap's"
else
    echo "podman.sh: $data/out.pcap differs from $data/in.pcap" >&2
    exit 1
fi
