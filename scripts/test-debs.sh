#!/usr/bin/env bash
# The packages' test (scripts/test.sh runs it as root; docs/packages.md):
# builds int-node and int-tools with scripts/build-debs.sh, runs lintian on
# both (an error or warning not overridden with its reason fails), installs
# them with apt-get as an operator would, runs the installed binaries on the
# installed files (the rules through promtool, the names file through
# collect), verifies the units, checks that nothing was enabled or started,
# enables both units as an operator would, removes the packages and checks
# that the units are disabled, purges both and checks that nothing is left:
# no file under /etc, /usr or /var/lib, no user, no group.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "packages: skipped (needs root and apt-get: sudo bash scripts/test-debs.sh)"
    exit 0
fi
for package in int-node int-tools; do
    if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed"; then
        echo "packages: $package is installed here already; purge it first" >&2
        exit 1
    fi
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# From the test build's binaries (PROFILE=dev, stripped): what is tested
# here is the packaging, and a second, optimised build would cost CI
# minutes. `bash scripts/build-debs.sh` alone builds what ships.
PROFILE=dev bash scripts/build-debs.sh "$out"

# lintian: every tag left is an error or a warning without an override.
lintian --fail-on error,warning "$out"/*.deb

# What the machine holds apart from apt's and dpkg's own books: files
# (names) and accounts, before the install and after the purge.
state() {
    find /etc /usr /var/lib -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/ucf \) -prune -o -print | sort
    getent passwd | cut -d: -f1 | sort
    getent group | cut -d: -f1 | sort
}
state > "$out/before"

(cd "$out" && DEBIAN_FRONTEND=noninteractive apt-get install -y ./int-node_*.deb ./int-tools_*.deb)

int-node check --config /etc/int-node/example.yaml
int-tools collect --help >/dev/null
dpkg-query -W -f='${Conffiles}\n' int-node | grep -q "/etc/int-node/example.yaml"
dpkg-query -W -f='${Conffiles}\n' int-tools | grep -q "/etc/default/int-tools-collect"
said=$(systemd-analyze verify --man=no /lib/systemd/system/int-node@example.service \
    /lib/systemd/system/int-tools-collect.service 2>&1 || echo "exit $?")
[[ -z "$said" ]] || { echo "packages: systemd-analyze verify: $said" >&2; exit 1; }
# No surprise: the package enabled nothing (a unit enabled has its symlink
# in a .wants folder under /etc/systemd/system).
if find /etc/systemd/system -name 'int-*' | grep .; then
    echo "packages: a unit was enabled by the install" >&2
    exit 1
fi

# What docs/dashboards.md loads from the package, and the names file the
# collector's flags point to, are there and read.
promtool check rules /usr/share/int-node/prometheus/int-node.rules.yml >/dev/null
(cd /usr/share/int-node/prometheus && promtool test rules int-node.rules.test.yml >/dev/null)
for kind in prometheus influxdb; do
    [[ $(ls /usr/share/int-node/grafana/$kind/*.json | wc -l) -eq 4 ]] \
        || { echo "packages: the $kind dashboards are not all in /usr/share/int-node/grafana/$kind" >&2; exit 1; }
done
int-tools collect --names /etc/int-tools/names.yaml --listen 127.0.0.1:0 --duration 0.1 --quiet >/dev/null

# An operator enables both units; removing the packages stops and disables
# them (no link left in a .wants folder), and the purge below finds nothing.
systemctl enable int-tools-collect.service int-node@example.service 2>/dev/null
[[ $(find /etc/systemd/system -name 'int-*' | wc -l) -eq 2 ]] \
    || { echo "packages: enabling the units made no links" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get remove -y int-node int-tools
if find /etc/systemd/system -name 'int-*' | grep .; then
    echo "packages: the remove left the units enabled" >&2
    exit 1
fi
DEBIAN_FRONTEND=noninteractive apt-get purge -y int-node int-tools
state > "$out/after"
if ! diff "$out/before" "$out/after"; then
    echo "packages: the purge left the above behind (> after, < before)" >&2
    exit 1
fi
echo "packages: built, lintian clean, installed, checked, purged, nothing left"
