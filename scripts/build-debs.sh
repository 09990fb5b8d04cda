#!/usr/bin/env bash
# Builds the Debian packages int-node and int-tools (docs/packages.md):
#
#   bash scripts/build-debs.sh [OUT_DIR]      # default: target/debian
#
# With dpkg-deb and dpkg-shlibdeps (Debian's dpkg-dev) around cargo, so CI
# needs no `cargo install` of a packaging tool. The binaries come from the
# `packaging` profile (optimised as release; PROFILE=release for release's
# fat LTO, minutes more on 2 CPUs). Dependencies on Debian's DPDK libraries
# are computed by dpkg-shlibdeps from what the binary links; the drivers EAL
# loads at run time (buses, the mempool ring) are named by hand, as no
# linker sees them. Nothing here enables or starts a service.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${PROFILE:-packaging}
out=$(realpath -m "${1:-target/debian}")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
maintainer="int-node maintainers <maintainers@users.noreply.a-seed-0547a1e7.example>"
# Reproducible: every date and mtime is the last commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

cargo build --locked --profile "$profile" -p int-node -p int-tools --bins
bin_dir=target/$profile
[[ "$profile" == "dev" ]] && bin_dir=target/debug
# debhelper's layout: the trees in debian/PACKAGE beside a debian/control,
# where dpkg-shlibdeps looks for them.
build=$out/build
stage=$build/debian
rm -rf "$build"
mkdir -p "$stage" "$out"
printf 'Source: int-node\n\nPackage: int-node\nArchitecture: any\n\nPackage: int-tools\nArchitecture: any\n' > "$stage/control"

# copy SRC DEST MODE: one file into a package's tree.
copy() { install -D -m "$3" "$1" "$2"; }

# binary SRC DEST: a binary into a package's tree, stripped as dh_strip
# does (the packaging profile strips already; the test's dev build does not).
binary() {
    copy "$1" "$2" 755
    strip --remove-section=.comment --remove-section=.note --strip-unneeded "$2"
}

node_summary="In-band Network Telemetry node on DPDK"
tools_summary="INT telemetry report tools: decode, collect, gen"

# doc_files PACKAGE SUMMARY: what both packages carry beside the binary:
# the copyright (DEP-5, the workspace's BSD-3-Clause), a one-entry
# changelog, a manual page and the lintian overrides.
doc_files() {
    local package=$1 doc=$stage/$1/usr/share/doc/$1
    mkdir -p "$doc"
    sed "s/@YEAR@/$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)/" deploy/debian/copyright > "$doc/copyright"
    chmod 644 "$doc/copyright"
    printf '%s (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
        "$package" "$version" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$maintainer" \
        "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n > "$doc/changelog.gz"
    chmod 644 "$doc/changelog.gz"
    # A manual page made from --help (help2man), so `man int-node` answers.
    mkdir -p "$stage/$package/usr/share/man/man1"
    help2man --no-info --version-string="$version" --name="$2" \
        "$bin_dir/$package" | gzip -9n > "$stage/$package/usr/share/man/man1/$package.1.gz"
    chmod 644 "$stage/$package/usr/share/man/man1/$package.1.gz"
    copy "deploy/debian/$package.lintian-overrides" "$stage/$package/usr/share/lintian/overrides/$package" 644
}

stage_int_node() {
    local root=$stage/int-node
    mkdir -p "$root/DEBIAN"
    binary "$bin_dir/int-node" "$root/usr/bin/int-node"
    sed 's|/usr/local/bin/|/usr/bin/|g' config/systemd/int-node@.service > "$root.unit"
    copy "$root.unit" "$root/lib/systemd/system/int-node@.service" 644 && rm "$root.unit"
    copy config/example.yaml "$root/etc/int-node/example.yaml" 644
    copy config/README.md "$root/usr/share/doc/int-node/config.md" 644
    for page in deployment commands counters metrics limits packages dashboards; do
        copy "docs/$page.md" "$root/usr/share/doc/int-node/$page.md" 644
    done
    # Where docs/dashboards.md provisions Grafana and loads the rules from.
    for file in deploy/grafana/*/*.json deploy/prometheus/*.yml; do
        copy "$file" "$root/usr/share/int-node/${file#deploy/}" 644
    done
    doc_files int-node "$node_summary"
}

stage_int_tools() {
    local root=$stage/int-tools
    mkdir -p "$root/DEBIAN"
    binary "$bin_dir/int-tools" "$root/usr/bin/int-tools"
    copy config/systemd/int-tools-collect.service "$root/lib/systemd/system/int-tools-collect.service" 644
    # The service's settings (the unit's --config), and the flags given
    # beside them (none); both conffiles, as everything under /etc.
    copy config/collect/collect.yaml "$root/etc/int-tools/collect.yaml" 644
    copy config/systemd/int-tools-collect.default "$root/etc/default/int-tools-collect" 644
    copy deploy/debian/int-tools.names.yaml "$root/etc/int-tools/names.yaml" 644
    for page in output scale-out commands packages deployment; do
        copy "docs/$page.md" "$root/usr/share/doc/int-tools/$page.md" 644
    done
    doc_files int-tools "$tools_summary"
}

# The Depends line dpkg-shlibdeps computes for PACKAGE's binary BINARY.
shlib_depends() {
    (cd "$build" && dpkg-shlibdeps -O "./debian/$1/usr/bin/$2") | sed -n 's/^shlibs:Depends=//p'
}

# control PACKAGE DEPENDS DESCRIPTION [EXTRA_FIELDS]: DEBIAN/ of a staged
# tree: control, conffiles (everything under /etc), md5sums, and the
# maintainer scripts of deploy/debian/PACKAGE.* when there are any.
control() {
    local package=$1 root=$stage/$1
    mkdir -p "$root/DEBIAN"
    {
        printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\n' "$package" "$version" "$arch" "$maintainer"
        printf 'Installed-Size: %s\nDepends: %s\n%sSection: net\nPriority: optional\n' \
            "$(du -sk --exclude=DEBIAN "$root" | cut -f1)" "$2" "${4:-}"
        printf 'Description: %s\n' "$3"
        sed 's/^/ /; s/^ $/ ./' "deploy/debian/$package.description"
    } > "$root/DEBIAN/control"
    (cd "$root" && find etc -type f 2>/dev/null | sort | sed 's|^|/|') > "$root/DEBIAN/conffiles"
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort | xargs md5sum) > "$root/DEBIAN/md5sums"
    for script in postinst prerm postrm; do
        if [[ -f "deploy/debian/$package.$script" ]]; then
            copy "deploy/debian/$package.$script" "$root/DEBIAN/$script" 755
        fi
    done
    chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${package}_${version}_${arch}.deb"
}

stage_int_node
stage_int_tools
# EAL dlopens its buses and the mempool driver: without them no port and no pool.
node_depends="$(shlib_depends int-node int-node), librte-bus-pci23, librte-bus-vdev23, librte-mempool-ring23"
control int-node "$node_depends" "$node_summary" \
    "Recommends: librte-net-af-packet23, librte-net-pcap23
Suggests: int-tools, librte-net-i40e23, librte-net-ice23, librte-net-iavf23, librte-net-ixgbe23, librte-net-mlx5-23, librte-net-virtio23
"
control int-tools "$(shlib_depends int-tools int-tools)" \
    "$tools_summary"
rm -rf "$build"
ls -l "$out"/*.deb
