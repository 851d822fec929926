#!/bin/sh
# The RPMs, end to end: `make dist`, `rpmbuild -ta` of that tarball into a
# scratch topdir, then every expected path, the Slurm-tied release and
# dependency, %config(noreplace), no .la, an unpacked scratch root, rpmlint.
# Skips (77) only when rpmbuild is not installed (after checking the
# tarball, which needs no rpm).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
die() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llmt-rpm.XXXXXX") || die "mktemp"
trap 'rm -rf "$tmp"' EXIT INT TERM

# ---- the tarball --------------------------------------------------------
pkg=$(sed -n 's/^PACKAGE_TARNAME = //p' "$top_builddir/Makefile")
ver=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
[ -n "$pkg" ] && [ -n "$ver" ] || die "no PACKAGE_TARNAME/VERSION in $top_builddir/Makefile"
tarball=$pkg-$ver.tar.gz
# make dist writes the tarball into the build tree; move it out at once so
# the tree stays clean (distcheck's distcleancheck looks for leftovers).
if ! ${MAKE:-make} -s -C "$top_builddir" dist >"$tmp/dist.log" 2>&1; then
	tail -20 "$tmp/dist.log"
	die "make dist failed"
fi
mv "$top_builddir/$tarball" "$tmp/" || die "make dist made no $tarball"
ok "make dist: $tarball"

# The tarball carries exactly one spec (rpmbuild -ta concatenates every
# *.spec it finds) plus what the packaging and the docs need.
tar tzf "$tmp/$tarball" >"$tmp/dist.list" || die "cannot list $tarball"
nspec=$(grep -c '\.spec$' "$tmp/dist.list")
[ "$nspec" = 1 ] || fail "tarball holds $nspec .spec files, want 1"
for f in packaging/slurm-llm-train.spec packaging/slurm-llm-train.spec.in \
	etc/plugstack.conf.d/llm-train.conf.in etc/llm-train.yaml \
	etc/examples/single-node.sbatch etc/examples/multi-node-cpu.sbatch \
	etc/examples/multi-node-gpu.sbatch doc/contracts.md doc/llm_train.8.in \
	doc/llm-train.yaml.5.in doc/llm-train.1 doc/llm-train-wrap.1 \
	doc/llm-train-plan.1.in LICENSE tests/packaging/rpm.sh tests/packaging/man.sh tests/packaging/examples.sh \
	packaging/slurm-llm-train.rpmlintrc include/llmt/exitcodes.h configure; do
	grep -qx "$pkg-$ver/$f" "$tmp/dist.list" || fail "tarball lacks $f"
done
# Every file under version control is in the tarball (distcheck and
# rpmbuild -ta build from it): only .gitignore/.gitattributes stay out.
if [ -e "$top_srcdir/.git" ] && command -v git >/dev/null 2>&1; then
	sed "s|^$pkg-$ver/||" "$tmp/dist.list" | sort -u >"$tmp/dist.files"
	git -C "$top_srcdir" ls-files | grep -Ev '(^|/)\.git(ignore|attributes)$' | sort -u >"$tmp/git.files"
	missing=$(comm -13 "$tmp/dist.files" "$tmp/git.files")
	[ -z "$missing" ] || fail "files under git but not in the tarball (add them to EXTRA_DIST or _SOURCES):" $missing
else
	echo "note: not a git checkout, tarball completeness against git not checked"
fi
[ $fails = 0 ] || exit 1

# Build dependencies are what %build needs: the test suite's own tools
# (there is no %check) would stop rpmbuild -ta where they are not packaged.
if command -v rpmspec >/dev/null 2>&1; then
	tar xzf "$tmp/$tarball" -O "$pkg-$ver/packaging/$pkg.spec" >"$tmp/spec.br" || fail "no spec in the tarball"
	br=$(rpmspec -q --buildrequires "$tmp/spec.br" 2>/dev/null | grep -Ei 'cmocka|prometheus|chromium')
	[ -z "$br" ] || fail "BuildRequires names what only the tests use:" $br
fi
[ $fails = 0 ] || exit 1

if ! command -v rpmbuild >/dev/null 2>&1; then
	echo "SKIP: rpmbuild not installed (Debian package rpm); the tarball was checked"
	exit 77
fi

# ---- rpmbuild -ta ---------------------------------------------------------
# --nodeps: Debian's rpm has an empty RPM database, so the Fedora/EL
# BuildRequires (slurm-devel, libyaml-devel, ...) cannot be seen there even
# though scripts/install-deps installed their Debian equivalents.
# Debian's brp-compress is bash marked #!/bin/sh: run it with bash so the
# man pages get compressed as on EL.
top="$tmp/rpmbuild"
mkdir -p "$top" || die "mkdir $top"
if ! rpmbuild -ta --nodeps --define "_topdir $top" --without cuda \
	--define '__brp_compress bash /usr/lib/rpm/brp-compress %{?_prefix}' \
	"$tmp/$tarball" >"$tmp/rpmbuild.log" 2>&1; then
	tail -40 "$tmp/rpmbuild.log"
	die "rpmbuild -ta failed (log above)"
fi
ok "rpmbuild -ta"
grep -i 'warning:' "$tmp/rpmbuild.log" | grep -v 'Could not canonicalize hostname' | sed 's/^/rpmbuild /'

# The Slurm version this build compiled against.
v=$(awk '$2 == "SLURM_VERSION_NUMBER" {print $3}' /usr/include/slurm/slurm_version.h)
sv=$(printf '%d.%02d.%d' $((v >> 16 & 255)) $((v >> 8 & 255)) $((v & 255)))
arch=$(rpm --eval '%{_arch}')
rel=1.slurm$sv
rpms=$top/RPMS/$arch
main=$rpms/$pkg-$ver-$rel.$arch.rpm
wrap=$rpms/$pkg-wrap-$ver-$rel.$arch.rpm
runtime=$rpms/$pkg-runtime-$ver-$rel.$arch.rpm
srpm=$top/SRPMS/$pkg-$ver-$rel.src.rpm
for r in "$main" "$wrap" "$runtime" "$srpm"; do
	[ -f "$r" ] || fail "missing $(basename "$r")"
done
[ $fails = 0 ] || { ls -R "$top/RPMS" "$top/SRPMS"; exit 1; }
ok "RPMs: $(cd "$top" && ls RPMS/*/*.rpm SRPMS/*.rpm | tr '\n' ' ')"

# The CUDA variant (rpmbuild --with cuda) swaps -runtime for -runtime-cuda,
# which provides -runtime; checked on the shipped spec without building.
spec=$tmp/spec
tar xzf "$tmp/$tarball" -O "$pkg-$ver/packaging/$pkg.spec" >"$spec" || fail "no spec in the tarball"
rpmspec -q --with cuda --qf '%{NAME} provides:%{PROVIDES}\n' "$spec" >"$tmp/cuda.q" 2>&1
grep -q "^$pkg-runtime-cuda provides:$pkg-runtime\$" "$tmp/cuda.q" \
	|| fail "--with cuda does not give $pkg-runtime-cuda providing $pkg-runtime: $(cat "$tmp/cuda.q")"
grep -q "^$pkg-runtime provides" "$tmp/cuda.q" && fail "--with cuda still builds $pkg-runtime"

# ---- the release and the dependency tie the plugin to this Slurm ----------
[ "$(rpm -qp --qf '%{RELEASE}' "$main")" = "$rel" ] || fail "release of $main is not $rel"
rpm -qp --requires "$main" >"$tmp/req"
grep -Eq "^slurm(\(x86-64\)|\($arch\))? = $sv\$" "$tmp/req" \
	|| { cat "$tmp/req"; fail "plugin package does not require slurm = $sv"; }

# A build whose Slurm is not the one the Release names stops after configure.
if rpmbuild -bc --nodeps --define "_topdir $tmp/mismatch" --define 'slurm_version 99.99.9' \
	"$spec" --define "_sourcedir $tmp" >"$tmp/mismatch.log" 2>&1; then
	fail "rpmbuild with slurm_version 99.99.9 against Slurm $sv did not fail"
elif ! grep -q 'configure found another Slurm than 99.99.9' "$tmp/mismatch.log"; then
	tail -5 "$tmp/mismatch.log"; fail "slurm_version mismatch failed for another reason"
else
	ok "a Release naming another Slurm (99.99.9) is refused at build time"
fi
rm -rf "$tmp/mismatch"

# ---- every expected path, in the right package ----------------------------
plugdir=/usr/lib64/slurm
check_list() { # rpm, then expected paths (globs allowed for man pages)
	r=$1; shift
	rpm -qlp "$r" >"$tmp/list" || { fail "rpm -qlp $r"; return; }
	echo "== $(basename "$r")"; sed 's/^/   /' "$tmp/list"
	for p in "$@"; do
		found=0
		while read -r l; do
			# shellcheck disable=SC2254
			case $l in $p) found=1; break;; esac
		done <"$tmp/list"
		[ $found = 1 ] || fail "$(basename "$r") lacks $p"
	done
	if grep -q '\.la$' "$tmp/list"; then fail "$(basename "$r") ships .la files"; fi
}
check_list "$main" "$plugdir/llm_train.so" /usr/bin/llm-train-plan \
	/etc/slurm/plugstack.conf.d/llm-train.conf /etc/slurm/llm-train.yaml \
	'/usr/share/man/man8/llm_train.8*' '/usr/share/man/man5/llm-train.yaml.5*' \
	'/usr/share/man/man1/llm-train-plan.1*' \
	"/usr/share/doc/$pkg/examples/multi-node-gpu.sbatch" \
	"/usr/share/doc/$pkg/contracts.md"
check_list "$wrap" /usr/bin/llm-train-wrap '/usr/share/man/man1/llm-train-wrap.1*'
check_list "$runtime" /usr/bin/llm-train '/usr/share/man/man1/llm-train.1*'

# Both files under /etc are %config(noreplace) (flags "cn"), nothing else is.
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$main" >"$tmp/flags"
for c in /etc/slurm/plugstack.conf.d/llm-train.conf /etc/slurm/llm-train.yaml; do
	grep -q "^cn $c\$" "$tmp/flags" || fail "$c is not %config(noreplace): $(grep " $c\$" "$tmp/flags")"
done
# The plugin refuses a policy not owned by root or writable by others.
rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]' "$main" >"$tmp/modes"
for c in /etc/slurm/plugstack.conf.d/llm-train.conf /etc/slurm/llm-train.yaml; do
	grep -q "^-rw-r--r-- root:root $c\$" "$tmp/modes" || fail "$c is not -rw-r--r-- root:root: $(grep " $c\$" "$tmp/modes")"
done
rpm -qp --qf '[%{FILEFLAGS:fflags}|%{FILEMODES:perms}|%{FILENAMES}\n]' \
	"$main" "$wrap" "$runtime" >"$tmp/allflags"
nonconf=$(awk -F'|' '$3 ~ /^\/etc\// && $2 !~ /^d/ && $1 !~ /c/ {print $3}' "$tmp/allflags")
[ -z "$nonconf" ] || fail "files under /etc that are not %config: $nonconf"

# ---- unpack into a scratch root and look at the files themselves ----------
root=$tmp/root
mkdir -p "$root"
for r in "$main" "$wrap" "$runtime"; do
	(cd "$root" && rpm2cpio "$r" | cpio -idm --quiet) || fail "unpacking $(basename "$r")"
done
so=$root$plugdir/llm_train.so
if [ -f "$so" ]; then
	file -L "$so" 2>/dev/null | grep -q 'ELF 64-bit LSB shared object' || fail "$so is not an ELF shared object"
	nm -D --defined-only "$so" | grep -q ' T slurm_spank_init$' || fail "llm_train.so does not export slurm_spank_init"
	nm -D --defined-only "$so" | grep -q ' [DRB] plugin_name$' || fail "llm_train.so does not export plugin_name"
else
	fail "no $plugdir/llm_train.so in the scratch root"
fi
# Hardening of every packaged ELF file: full RELRO (relro + bind now), a
# stack that is not executable, no RPATH (the CPU build needs none); the
# plugin exports only what Slurm looks up.
for f in $(find "$root" -type f); do
	file -b "$f" | grep -q '^ELF' || continue
	rel=${f#"$root"}
	readelf -lW "$f" | grep -q 'GNU_RELRO' || fail "$rel: no RELRO"
	readelf -dW "$f" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' || fail "$rel: not linked with -z now"
	readelf -lW "$f" | grep 'GNU_STACK' | grep -q 'RWE' && fail "$rel: executable stack"
	readelf -dW "$f" | grep -Eq '\((RPATH|RUNPATH)\)' && fail "$rel: has an RPATH: $(readelf -dW "$f" | grep -E 'RPATH|RUNPATH')"
done
extra=$(nm -D --defined-only "$so" 2>/dev/null | awk '{print $3}' | grep -Ev '^(slurm_spank_[a-z_]+|plugin_[a-z_]+|spank_plugin_version|_init|_fini)$')
[ -z "$extra" ] || fail "llm_train.so exports more than slurm_spank_* and plugin_*:" $extra
for c in llm-train llm-train-wrap llm-train-plan; do
	[ -x "$root/usr/bin/$c" ] || fail "/usr/bin/$c missing or not executable in the scratch root"
done
conf=$root/etc/slurm/plugstack.conf.d/llm-train.conf
grep -Eq "^required $plugdir/llm_train\.so policy=/etc/slurm/llm-train\.yaml\$" "$conf" \
	|| fail "plugstack snippet does not load $plugdir/llm_train.so with the policy: $(grep -v '^#' "$conf")"
for m in man8/llm_train.8 man5/llm-train.yaml.5 man1/llm-train.1 man1/llm-train-wrap.1 man1/llm-train-plan.1; do
	f=$(ls "$root/usr/share/man/$m"* 2>/dev/null | head -1)
	if [ -z "$f" ]; then fail "no $m in the scratch root"; continue; fi
	zcat -f "$f" | grep -q '^\.TH ' || fail "$m has no .TH header"
	zcat -f "$f" | grep -q '@slurm[a-z]*@' && fail "$m: a @...@ placeholder was not substituted"
done
# the pages name the directories this build was configured with
f=$(ls "$root/usr/share/man/man8/llm_train.8"* 2>/dev/null | head -1)
[ -n "$f" ] && { zcat -f "$f" | grep -q "^required $plugdir/llm_train\.so policy=/etc/slurm/llm\\\\-train\.yaml" ||
	fail "llm_train(8) does not show the packaged plugin and policy paths"; }
for r in "$main" "$wrap" "$runtime"; do
	rpm -qlp "$r" | grep -q '^/usr/share/licenses/.*/LICENSE$' || fail "$(basename "$r") does not carry LICENSE (%license)"
done
[ "$(find "$root" -name '*.la' | wc -l)" = 0 ] || fail ".la files in the scratch root"

# ---- rpmlint: clean once the filters explained in the rpmlintrc apply -----
if command -v rpmlint >/dev/null 2>&1; then
	echo "rpmlint without filters:"
	rpmlint "$main" "$wrap" "$runtime" "$srpm" 2>&1 | grep -E '(W|E): ' | sed 's/^/   /'
	rpmlint -r "$top_srcdir/packaging/slurm-llm-train.rpmlintrc" --ignore-unused-rpmlintrc \
		"$main" "$wrap" "$runtime" "$srpm" >"$tmp/rpmlint.log" 2>&1
	echo "rpmlint with packaging/slurm-llm-train.rpmlintrc:"
	sed 's/^/   /' "$tmp/rpmlint.log"
	grep -q ' 0 errors, 0 warnings' "$tmp/rpmlint.log" || fail "rpmlint is not clean (above)"
else
	echo "note: rpmlint not installed, lint not checked"
fi

[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: RPMs built from the tarball and every path checked"
