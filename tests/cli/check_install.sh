#!/bin/sh
# check_install.sh CMAKE BUILD_DIR - the man page and the bash completion
# after `cmake --install` (component gpu-profile-docs, into a temporary
# prefix): gpu-profile.1 exists in share/man/man1 and renders with man -l
# and groff (when installed) without warnings, with OPTIONS (a tagged
# paragraph per option), ENVIRONMENT, FILES, EXIT STATUS and EXAMPLES, and
# the documents it names installed in share/doc/gpu-profile; the completion script
# passes `bash -n` and completes subcommands, options and option values,
# driven through its `complete -F` function with COMP_WORDS / COMP_CWORD.
set -eu
cmake=$1
build=$2
prog="$build/gpu-profile"
tmp=$(mktemp -d /tmp/gp-install-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

sh "$(dirname "$0")/../install_tmp.sh" "$cmake" "$build" "$tmp" gpu-profile-docs >/dev/null
man1="$tmp/share/man/man1/gpu-profile.1"
comp="$tmp/share/bash-completion/completions/gpu-profile"
[ -s "$man1" ] || no "no $man1"
[ -s "$comp" ] || no "no $comp"

if command -v groff >/dev/null 2>&1; then
    warn=$(groff -man -Tutf8 -ww -z "$man1" 2>&1) || no "groff failed"
    [ -z "$warn" ] || no "groff warns: $warn"
    text=$(groff -man -Tutf8 "$man1" 2>/dev/null | sed 's/.\x08//g')
    for want in "SUBCOMMANDS" "gpu-profile report" "--nvml-library" "EXIT STATUS" \
        "OPTIONS" "ENVIRONMENT" "GPUFL_API_KEY" "CUDA_VISIBLE_DEVICES" "FILES" \
        "libgpuprofile_cupti.so" "EXAMPLES" "gpu-profile --duration 60" "SEE ALSO"; do
        case $text in *"$want"*) ;; *) no "the rendered page lacks '$want'" ;; esac
    done
fi
# Each option of the run form is a tagged paragraph of OPTIONS (not the
# --help text pasted in a .nf block).
n_opts=$("$prog" help --options | grep -c '^--')
n_tp=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$man1" | grep -c '^\.TP' || true)
[ "$n_tp" -ge $((n_opts - 6)) ] || no "OPTIONS has $n_tp tagged paragraphs for $n_opts options"
# The documentation the page names is installed, at the same place under
# the prefix (the page names the configured prefix's paths).
docs=$(sed 's/\\-/-/g' "$man1" | grep -o '/share/doc/gpu-profile/[a-z-]*\.md' | sort -u)
[ -n "$docs" ] || no "the page names no installed document (share/doc/gpu-profile/*.md)"
for d in $docs /share/doc/gpu-profile/python.md; do
    [ -s "$tmp$d" ] || no "the page or the Python docstrings name $d, not installed"
done
if command -v man >/dev/null 2>&1; then
    MANPAGER=cat MANWIDTH=80 man -l "$man1" >/dev/null 2>&1 || no "man -l $man1 failed"
fi

command -v bash >/dev/null 2>&1 || { echo "no bash: completion not checked"; exit $fail; }
bash -n "$comp" || no "bash -n $comp"

# complete WORDS...: the last word is the one being completed.
complete_words() {
    bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _gpu_profile
        printf "%s\n" "${COMPREPLY[@]}"' complete "$comp" "$prog" "$@"
}
# expect WANT WORDS...: WANT is one of the completions.
expect() {
    want=$1
    shift
    got=$(complete_words "$@")
    printf '%s\n' "$got" | grep -qx -- "$want" || no "gpu-profile $* <TAB>: '$want' not in: $(echo $got)"
}
expect report rep
expect --engine --eng
expect Trace --engine Tr
expect PmSampling --json --engine P
expect --backend=nvml --backend=n
expect --format report --for
expect json report --format j
expect chrome-trace export --format c
expect --chip metrics list --ch
expect list metrics l
expect serve help se
expect --nvml-library devices --nvml
# after CMD, the words are CMD's: none of ours
got=$(complete_words -- ls --eng)
printf '%s\n' "$got" | grep -qx -- --engine && no "an option of ours offered after CMD"
# a file value: --samples completes paths
touch "$tmp/samples-x.csv"
expect "$tmp/samples-x.csv" --samples "$tmp/samples-"
exit $fail
