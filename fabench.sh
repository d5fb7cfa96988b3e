#!/bin/sh
# fabench.sh - the README's two commands, from a bare Debian 12:
#
#   ./fabench.sh run     install what is missing, build, make run
#   ./fabench.sh test    install what is missing, build, make test
#
# A minimal Debian has neither make nor gcc, so this is POSIX sh (dash) and
# needs nothing but the base system: tools/ensure-deps installs the packages
# (as root through apt-get; otherwise through sudo, or it prints the command
# to run and exits 2), then make does the rest. Further arguments go to make
# (./fabench.sh test VARIANT=san, ./fabench.sh run FABENCH_ARGS=--quiet).
set -u
usage() {
	echo "usage: ./fabench.sh run|test [MAKE ARGS...]"
	echo "  run   install missing packages, build, run suites/smoke.yaml (make run)"
	echo "  test  install missing packages, build, run every test (make test)"
}
cd "$(dirname "$0")" || exit 2
case "${1:-}" in
run | test) ;;
-h | --help)
	usage
	exit 0
	;;
*)
	if [ -n "${1:-}" ]; then
		echo "fabench.sh: unknown command '$1'" >&2
	else
		echo "fabench.sh: missing command" >&2
	fi
	usage >&2
	exit 2
	;;
esac
target=$1
shift
sh tools/ensure-deps || exit $?
exec make "$target" "$@"
