#!/usr/bin/env bash
# The packages' test (scripts/test.sh runs it as root; docs/packages.md):
# builds int-node and int-tools with scripts/build-debs.sh, runs lintian on
# both (an error or warning not overridden with its reason fails), installs
# them with apt-get as an operator would, runs the installed binaries on the
# installed files (the rules through promtool, the names file through
# collect, the collector's config through its --check), verifies the units
# (the collector's runs from its config), checks that nothing was enabled
# or started and that an operator's flags kept at an upgrade are reported,
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
for conffile in /etc/default/int-tools-collect /etc/int-tools/collect.yaml /etc/int-tools/names.yaml; do
    dpkg-query -W -f='${Conffiles}\n' int-tools | grep -q " $conffile " \
        || { echo "packages: $conffile is no conffile of int-tools" >&2; exit 1; }
done
# The collector's service runs from its file: the unit names it (flags of
# /etc/default/int-tools-collect beside it), checks it before a start and
# a reload, and the installed file passes that check.
collector_unit=/lib/systemd/system/int-tools-collect.service
for line in 'ExecStartPre=/usr/bin/int-tools collect --check --config /etc/int-tools/collect.yaml $COLLECT_ARGS' \
    'ExecStart=/usr/bin/int-tools collect --config /etc/int-tools/collect.yaml $COLLECT_ARGS' \
    'ExecReload=/usr/bin/int-tools collect --check --config /etc/int-tools/collect.yaml $COLLECT_ARGS' \
    'ExecReload=/bin/kill -HUP $MAINPID' \
    'EnvironmentFile=-/etc/default/int-tools-collect'; do
    grep -qxF "$line" "$collector_unit" || { echo "packages: $collector_unit lacks: $line" >&2; exit 1; }
done
int-tools collect --check --config /etc/int-tools/collect.yaml
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
int-tools collect --config /etc/int-tools/collect.yaml --names /etc/int-tools/names.yaml \
    --listen 127.0.0.1:0 --duration 0.1 >/dev/null

# An operator's flags kept in /etc/default/int-tools-collect at an upgrade
# (dpkg keeps an edited conffile) still apply beside the file: the package
# says so at configure, not silently. A reinstall is that upgrade.
echo 'COLLECT_ARGS="--listen 0.0.0.0:32766 --interval 10"' >> /etc/default/int-tools-collect
said=$(dpkg -i "$out"/int-tools_*.deb 2>&1)
grep -q "gives the collector flags beside" <<<"$said" && grep -q -- "--interval 10" <<<"$said" \
    || { echo "packages: an upgrade kept the operator's flags without a word: $said" >&2; exit 1; }

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
