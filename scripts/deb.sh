#!/usr/bin/env bash
# make deb: Debian packages from the release build (docs/DEPLOYMENT.md, "Installing the packages").
#
#   scripts/deb.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds sharebroker, sharebrokerd and libsharebroker-c.so from
# `swift build -c release --static-swift-stdlib` (the Makefile's deb target builds them). Writes to
# OUT_DIR, with dpkg-deb only (no debhelper, no source package):
#   sharebroker          the agent, the host tool, the systemd unit, the sysusers entry, examples
#   libsharebroker1      the C library (SONAME libsharebroker.so.1), the Swift runtime linked in
#   libsharebroker-dev   header, pkg-config file (no -rpath), the .so link, the C and Python examples
#   *-dbgsym             the debug symbols of each, under /usr/lib/debug/.build-id
# Every ELF file is checked first: no RUNPATH or RPATH, no Swift or Foundation library needed.
# Environment: DEB_VERSION (default 1.0.0-1), DEB_MAINTAINER.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/deb.sh BIN_DIR OUT_DIR}
out=${2:?usage: scripts/deb.sh BIN_DIR OUT_DIR}
version=${DEB_VERSION:-1.0.0-1}
maintainer=${DEB_MAINTAINER:-ShareBroker maintainers <maintainers@sharebroker.example>}
lib_version=1.0.0
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=usr/lib/$multiarch
homepage=${DEB_HOMEPAGE:-}

for f in sharebroker sharebrokerd libsharebroker-c.so; do
    [ -f "$bin/$f" ] || { echo "deb: $bin/$f is missing: build it with make deb (swift build -c release --static-swift-stdlib)"; exit 1; }
done

# No build-machine path at run time: no RUNPATH/RPATH at all, and none of the toolchain's libraries.
for f in sharebroker sharebrokerd libsharebroker-c.so; do
    dynamic=$(readelf -d "$bin/$f")
    if grep -Eq '\((RUNPATH|RPATH)\)' <<<"$dynamic"; then
        grep -E '\((RUNPATH|RPATH)\)' <<<"$dynamic"
        echo "deb: $f carries a run-time search path; build with --static-swift-stdlib (the Makefile's deb target does)"
        exit 1
    fi
    if grep -Ei 'NEEDED.*\[(libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime)' <<<"$dynamic"; then
        echo "deb: $f needs a library of the Swift toolchain (above); build with --static-swift-stdlib"
        exit 1
    fi
done
if readelf -d "$bin/libsharebroker-c.so" | grep -Eqi 'NEEDED.*(Foundation|icu)'; then
    echo "deb: libsharebroker needs Foundation or ICU; its modules must not import Foundation"; exit 1
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/sharebroker-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
umask 022
mkdir -p "$out"

# Copies an ELF file into a package, stripped as dh_strip does, with its debug information in the
# matching -dbgsym package under /usr/lib/debug/.build-id/xx/yyyy.debug. Prints the build id.
install_elf() {  # source, package, destination (relative), strip mode (--strip-unneeded for libraries)
    local source=$1 package=$2 destination=$3 mode=$4
    local id
    id=$(readelf -n "$source" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
    [ -n "$id" ] || { echo "deb: $source has no build id"; exit 1; }
    local debug="$stage/$package-dbgsym/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
    install -d "$(dirname "$debug")" "$(dirname "$stage/$package/$destination")"
    objcopy --only-keep-debug --compress-debug-sections "$source" "$debug"
    chmod 0644 "$debug"
    # shellcheck disable=SC2086
    strip --remove-section=.comment --remove-section=.note $mode -o "$stage/$package/$destination" "$source"
    objcopy --add-gnu-debuglink="$debug" "$stage/$package/$destination"
    chmod 0755 "$stage/$package/$destination"
    [[ $package == lib* && $destination == *.so.* ]] && chmod 0644 "$stage/$package/$destination"
    echo "$id" >> "$stage/$package.build-ids"
}

# /usr/share/doc/PACKAGE: copyright and changelog.Debian.gz, as Debian policy asks.
install_doc() {  # package
    local doc="$stage/$1/usr/share/doc/$1"
    install -d "$doc"
    install -m 0644 deploy/debian/copyright "$doc/copyright"
    gzip -9n -c deploy/debian/changelog > "$doc/changelog.Debian.gz"
    chmod 0644 "$doc/changelog.Debian.gz"
}

# The Depends of ELF files, from dpkg-shlibdeps (which wants a debian/control to read).
shlib_depends() {  # files...
    local work="$stage/shlibdeps"
    mkdir -p "$work/debian"
    printf 'Source: sharebroker\nMaintainer: %s\n\nPackage: sharebroker\nArchitecture: any\n' "$maintainer" > "$work/debian/control"
    local files=()
    for f in "$@"; do files+=("$(realpath "$f")"); done
    (cd "$work" && dpkg-shlibdeps -O -e"${files[@]}" | sed -n 's/^shlibs:Depends=//p')
}

# DEBIAN/control, md5sums, then dpkg-deb. Installed-Size is the files' size in KiB.
build_package() {  # package, control fields (without Package/Version/Architecture/Maintainer/Installed-Size)
    local package=$1 fields=$2 root="$stage/$1"
    install -d "$root/DEBIAN"
    local size
    size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
    {
        echo "Package: $package"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $size"
        printf '%s\n' "$fields"
    } > "$root/DEBIAN/control"
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 -r md5sum) > "$root/DEBIAN/md5sums"
    [ -s "$root/DEBIAN/md5sums" ] || rm "$root/DEBIAN/md5sums"
    find "$root" -type d -exec chmod 0755 {} +
    chmod 0644 "$root/DEBIAN/control"
    [ ! -e "$root/DEBIAN/md5sums" ] || chmod 0644 "$root/DEBIAN/md5sums"
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${package}_${version}_${arch}.deb" >/dev/null
    echo "deb: ${package}_${version}_${arch}.deb: installs $size KiB"
}

# The debug-symbol package of PACKAGE, as debhelper names and marks them.
build_dbgsym() {  # package
    local package=$1
    install -d "$stage/$package-dbgsym/usr/share/doc"
    ln -s "$package" "$stage/$package-dbgsym/usr/share/doc/$package-dbgsym"
    build_package "$package-dbgsym" "Auto-Built-Package: debug-symbols
Section: debug
Priority: optional
Depends: $package (= $version)
Build-Ids: $(sort "$stage/$package.build-ids" | tr '\n' ' ' | sed 's/ $//')
Description: debug symbols for $package"
}

# --- libsharebroker1 ---------------------------------------------------------------------------
install_elf "$bin/libsharebroker-c.so" libsharebroker1 "$libdir/libsharebroker.so.$lib_version" --strip-unneeded
ln -s "libsharebroker.so.$lib_version" "$stage/libsharebroker1/$libdir/libsharebroker.so.1"
install_doc libsharebroker1
install -d "$stage/libsharebroker1/DEBIAN"
echo "libsharebroker 1 libsharebroker1 (>= ${lib_version})" > "$stage/libsharebroker1/DEBIAN/shlibs"
{
    echo "libsharebroker.so.1 libsharebroker1 #MINVER#"
    echo " SHAREBROKER_1@SHAREBROKER_1 ${lib_version}"
    sed "s/.*/ &@SHAREBROKER_1 ${lib_version}/" capi/exported-symbols.txt
} > "$stage/libsharebroker1/DEBIAN/symbols"
echo "activate-noawait ldconfig" > "$stage/libsharebroker1/DEBIAN/triggers"
chmod 0644 "$stage/libsharebroker1/DEBIAN/"{shlibs,symbols,triggers}
build_package libsharebroker1 "Section: libs
Priority: optional
Multi-Arch: same
Depends: $(shlib_depends "$stage/libsharebroker1/$libdir/libsharebroker.so.$lib_version")
Description: ShareBroker data-loss-prevention layer (C library)
 ShareBroker mediates what a managed app may share: documents (Open In), the
 clipboard (clear, sealed for managed apps, or nothing), printing, drag and
 drop and links, under a policy the ShareBroker agent pushes.
 .
 This package holds libsharebroker.so.1, the C interface apps in C, C++,
 Rust or Python load. The Swift runtime it is written against is linked into
 it: no Swift toolchain is needed.${homepage:+
Homepage: $homepage}"
build_dbgsym libsharebroker1

# --- libsharebroker-dev ------------------------------------------------------------------------
dev="$stage/libsharebroker-dev"
install -d "$dev/usr/include" "$dev/$libdir/pkgconfig" "$dev/usr/share/doc/libsharebroker-dev/examples/c" \
    "$dev/usr/share/doc/libsharebroker-dev/examples/python"
install -m 0644 include/sharebroker.h "$dev/usr/include/sharebroker.h"
ln -s libsharebroker.so.1 "$dev/$libdir/libsharebroker.so"
sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|\${prefix}/lib/$multiarch|" -e "s|@VERSION@|$lib_version|" capi/sharebroker.pc.in \
    > "$dev/$libdir/pkgconfig/sharebroker.pc"
chmod 0644 "$dev/$libdir/pkgconfig/sharebroker.pc"
install -m 0644 examples/c/copy_and_open_in.c "$dev/usr/share/doc/libsharebroker-dev/examples/c/"
install -m 0644 examples/python/copy_and_open_in.py "$dev/usr/share/doc/libsharebroker-dev/examples/python/"
install_doc libsharebroker-dev
build_package libsharebroker-dev "Section: libdevel
Priority: optional
Multi-Arch: same
Depends: libsharebroker1 (= $version)
Description: ShareBroker data-loss-prevention layer (C development files)
 ShareBroker mediates what a managed app may share: documents (Open In), the
 clipboard (clear, sealed for managed apps, or nothing), printing, drag and
 drop and links, under a policy the ShareBroker agent pushes.
 .
 This package holds the header sharebroker.h, the pkg-config file
 (pkg-config --cflags --libs sharebroker) and a C and a Python example.${homepage:+
Homepage: $homepage}"

# --- sharebroker -------------------------------------------------------------------------------
app="$stage/sharebroker"
install_elf "$bin/sharebroker" sharebroker usr/bin/sharebroker ""
install_elf "$bin/sharebrokerd" sharebroker usr/bin/sharebrokerd ""
install -d "$app/lib/systemd/system" "$app/usr/lib/sysusers.d" "$app/etc/sharebroker/policies.d" \
    "$app/usr/share/doc/sharebroker/examples/policies"
sed -e 's|@BINDIR@|/usr/bin|' -e 's|@DOCDIR@|/usr/share/doc/sharebroker|' deploy/systemd/sharebrokerd.service \
    > "$app/lib/systemd/system/sharebrokerd.service"
chmod 0644 "$app/lib/systemd/system/sharebrokerd.service"
install -m 0644 deploy/systemd/sharebroker.sysusers "$app/usr/lib/sysusers.d/sharebroker.conf"
install_doc sharebroker
install -m 0644 docs/DEPLOYMENT.md "$app/usr/share/doc/sharebroker/DEPLOYMENT.md"
install -m 0644 examples/device-*.json "$app/usr/share/doc/sharebroker/examples/"
install -m 0644 examples/policies/*.json "$app/usr/share/doc/sharebroker/examples/policies/"
sed -e 's|@BINDIR@|/usr/bin|' deploy/systemd/otlp.conf > "$app/usr/share/doc/sharebroker/examples/otlp.conf"
chmod 0644 "$app/usr/share/doc/sharebroker/examples/otlp.conf"
install -d "$app/DEBIAN"
for script in postinst prerm postrm; do
    install -m 0755 "deploy/debian/sharebroker.$script" "$app/DEBIAN/$script"
done
build_package sharebroker "Section: admin
Priority: optional
Depends: $(shlib_depends "$app/usr/bin/sharebroker" "$app/usr/bin/sharebrokerd"), systemd | systemd-standalone-sysusers
Description: data-loss-prevention agent and host tool of ShareBroker
 ShareBroker mediates what a managed app may share: documents (Open In), the
 clipboard (clear, sealed for managed apps, or nothing), printing, drag and
 drop and links, under policies from /etc/sharebroker.
 .
 This package holds the agent sharebrokerd, which runs as the system service
 sharebrokerd.service under its own user, identifies each app from the
 kernel, keeps the keys and pushes each app its policy, and the tool
 sharebroker (policy check, explain, import, the host commands, admin).
 See /usr/share/doc/sharebroker/DEPLOYMENT.md.${homepage:+
Homepage: $homepage}"
build_dbgsym sharebroker
