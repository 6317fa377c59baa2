#!/bin/sh
# gen-manpage.sh GPU_PROFILE OUT - writes the gpu-profile(1) man page to OUT
# from the command's own help text (gpu-profile --help and gpu-profile help
# CMD for each subcommand), so the page says what --help says.  Ours rather
# than help2man: no build dependency, and the subcommand pages come along.
# Needs only sh and sed.
set -eu
prog=$1
out=$2
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT

# roff: backslashes as \e, a leading . or ' guarded, - as \- (man's
# searchable hyphen-minus).
esc() {
    sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/" -e 's/-/\\-/g'
}

version=$("$prog" --version | sed 's/^gpu-profile //')
{
    printf '.TH GPU-PROFILE 1 "" "gpu-profile %s" "User Commands"\n' "$version"
    printf '.SH NAME\ngpu\\-profile \\- run a command and profile the GPUs while it runs\n'
    printf '.SH SYNOPSIS\n.nf\n'
    "$prog" --help | sed -n '1,/^$/p' | sed '/^$/d' | esc
    printf '.fi\n.SH DESCRIPTION\n.nf\n'
    "$prog" --help | sed '1,/^$/d' | esc
    printf '.fi\n'
    printf '.SH SUBCOMMANDS\n'
    for cmd in $("$prog" help --commands); do
        printf '.SS %s\n.nf\n' "$cmd"
        "$prog" help "$cmd" | esc
        printf '.fi\n'
    done
    printf '.SH EXIT STATUS\n'
    printf '0 done; 1 nothing done (no backend, CUPTI failed, nothing read, output not\n'
    printf 'written); 2 a partial read (report, export); 125 a usage mistake, or the run\n'
    printf 'form could not start (CMD not run); otherwise the run form exits with CMD'"'"'s\n'
    printf 'status (128+N for signal N, 126 / 127 not executable / not found).\n'
    printf '.SH SEE ALSO\n'
    printf 'nvidia\\-smi(1); docs/cli.md in the gpu\\-profile sources.\n'
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
