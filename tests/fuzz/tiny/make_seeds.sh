#!/bin/sh
# make_seeds.sh OUT_DIR - the small committed seeds of fuzz_symbolize, from
# tiny.c: a static executable and a shared object (.symtab, .dynsym, build-id)
# of 1-3 KB each, and two stripped files followed by the separator line and
# their debug file (by .gnu_debuglink named sf_link.debug, by build-id).
# Small inputs keep the fuzzer fast; the fixture programs of tests/symfix are
# added as larger seeds at build time (sym_seeds.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
f="-O1 -fno-asynchronous-unwind-tables -fno-stack-protector -nostdlib -Wl,-N -Wl,-z,norelro"
cc $f -Wl,--build-id=sha1 -static -fno-pie -no-pie -o "$t/tiny_static" "$here/tiny.c"
cc $f -Wl,--build-id=sha1 -fPIC -shared -o "$t/tiny_shared" "$here/tiny.c"
cc $f -Wl,--build-id=none -static -fno-pie -no-pie -o "$t/nobid" "$here/tiny.c"
objcopy --only-keep-debug "$t/nobid" "$t/sf_link.debug"
strip --strip-all -o "$t/sf_link" "$t/nobid"
(cd "$t" && objcopy --add-gnu-debuglink=sf_link.debug sf_link)
objcopy --only-keep-debug "$t/tiny_static" "$t/bid.debug"
strip --strip-all -o "$t/bid" "$t/tiny_static"
mkdir -p "$out"
cp "$t/tiny_static" "$t/tiny_shared" "$out/"
{ cat "$t/sf_link"; printf '\nQPFUZZ-DEBUG\n'; cat "$t/sf_link.debug"; } >"$out/tiny_link+debug"
{ cat "$t/bid"; printf '\nQPFUZZ-DEBUG\n'; cat "$t/bid.debug"; } >"$out/tiny_bid+debug"
