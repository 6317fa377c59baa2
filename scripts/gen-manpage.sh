#!/bin/sh
# gen-manpage.sh GPU_PROFILE OUT [DOCDIR [LIBDIR]] - writes the gpu-profile(1)
# man page to OUT from the command's own help text, so the page says what
# --help says: its usage as SYNOPSIS, its first paragraphs as DESCRIPTION,
# each option as a tagged paragraph of OPTIONS, `gpu-profile help CMD` for
# each subcommand in SUBCOMMANDS, its exit statuses in EXIT STATUS and its
# examples in EXAMPLES; ENVIRONMENT and FILES are written here (the
# variables and files the command reads, the documentation installed in
# DOCDIR, the plugin in LIBDIR).  Ours rather than help2man: no build
# dependency, and the subcommand pages come along.  Needs only sh, sed and
# awk.  A help text whose layout it does not know (no "options:" line)
# still gives a page: the rest in DESCRIPTION, as written.
set -eu
prog=$1
out=$2
docdir=${3:-/usr/local/share/doc/gpu-profile}
libdir=${4:-/usr/local/lib}
tmp="$out.tmp.$$"
help="$out.help.$$"
trap 'rm -f "$tmp" "$help"' EXIT

# roff: backslashes as \e, a leading . or ' guarded, - as \- (man's
# searchable hyphen-minus).
esc() {
    sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/" -e 's/-/\\-/g'
}
# The same for a path or name written here.
e() { printf '%s' "$1" | esc; }

"$prog" --help >"$help"
version=$("$prog" --version | sed 's/^gpu-profile //')

# The help text after its usage block, as roff sections: DESCRIPTION
# (filled paragraphs), OPTIONS (.TP per option: "  --opt ARG   text", text
# continued on lines indented further), EXIT STATUS (the "exit status:"
# paragraph), EXAMPLES (the "examples:" lines, verbatim).  The subcommand
# list is left out: SUBCOMMANDS has each one's page.
body() {
    sed '1,/^$/d' "$help" | esc | awk '
    function section(name) { if (mode == "ex") print ".EE"; mode = name }
    # A line that starts with a dot or a quote once unindented is text, not a request.
    function text(s) { c = substr(s, 1, 1); return (c == "." || c == "\047") ? "\\&" s : s }
    /^options:$/        { section("opt"); print ".SH OPTIONS"; next }
    /^exit status:/     { section("exit"); print ".SH EXIT STATUS"; sub(/^exit status: */, ""); print; next }
    /^examples:$/       { section("ex"); print ".SH EXAMPLES"; print ".EX"; next }
    /^subcommands/      { section("subs"); next }
    mode == "subs"      { next }
    mode == "ex"        { if ($0 != "") print substr($0, 3); next }
    /^$/                { if (mode == "desc" || mode == "exit") print ".PP"; next }
    mode == "opt" && /^  \\?-/ {
        line = substr($0, 3)
        tag = line; rest = ""
        if (match(line, /  +/)) { tag = substr(line, 1, RSTART - 1); rest = substr(line, RSTART + RLENGTH) }
        print ".TP"; print "\\fB" tag "\\fR"
        if (rest != "") print text(rest)
        next }
    mode == "opt"       { sub(/^ +/, ""); print text($0); next }
    { print }
    END { section("") }
    BEGIN { mode = "desc" }'
}

{
    printf '.TH GPU-PROFILE 1 "" "gpu-profile %s" "User Commands"\n' "$version"
    printf '.SH NAME\ngpu\\-profile \\- run a command and profile the GPUs while it runs\n'
    printf '.SH SYNOPSIS\n.nf\n'
    sed -n '1,/^$/p' "$help" | sed -e '/^$/d' -e 's/^usage: //' -e 's/^       //' | esc
    printf '.fi\n.SH DESCRIPTION\n'
    body >"$tmp.body"
    # Sections in man's order: what came before OPTIONS, OPTIONS, then
    # SUBCOMMANDS, EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES.
    awk '/^\.SH EXIT STATUS$/ || /^\.SH EXAMPLES$/ { exit } { print }' "$tmp.body"
    printf '.SH SUBCOMMANDS\n'
    for cmd in $("$prog" help --commands); do
        printf '.SS %s\n.nf\n' "$cmd"
        "$prog" help "$cmd" | esc
        printf '.fi\n'
    done
    awk '/^\.SH EXAMPLES$/ { p = 0 } /^\.SH EXIT STATUS$/ { p = 1 } p' "$tmp.body"
    cat <<EOF
.PP
The subcommands: 0 done; 1 nothing done (no backend, CUPTI failed, nothing
read, a bound reached, output not written); 2 a partial read (report,
export: a warning says what was skipped); 125 a usage mistake.
.SH ENVIRONMENT
.TP
.B CUDA_VISIBLE_DEVICES
Without \\fB\\-\\-device\\fR, the run form samples the GPUs CMD can see.
.TP
.B GPUFL_API_KEY
The key \\fBupload\\fR sends (the safe way to give it: never on the command
line, never printed or written); \\fBGPUFL_BACKEND_URL\\fR, \\fBGPUFL_API_PATH\\fR
the backend's address.
.TP
.B GPUFL_DISABLED
\\fB1\\fR: record nothing (\\fB\\-\\-log\\-dir\\fR, the injected plugin).
.TP
.BR GPUFL_CONFIG_FILE ", " GPUFL_LOG_PATH ", " GPUFL_PROFILING_ENGINE ", ..."
The flight recorder's settings for a recorded run and for the CUPTI plugin
in CMD's processes; every one in $(e "$docdir/gpufl.md").
.TP
.B GPUFL_CUPTI_PLUGIN
The CUPTI plugin to load instead of the installed one.
.TP
.B GPUFL_CURL_LIBRARY
The libcurl \\fBupload\\fR loads (default libcurl.so.4).
.TP
.BR GPU_PROFILE_MAX_DISTINCT ", " GPU_PROFILE_MAX_FILE_LINES ", " GPU_PROFILE_MAX_FILE_BYTES
Bounds of \\fBreport\\fR and \\fBexport\\fR on what a session may hold
($(e "$docdir/report.md")).
.TP
.B PATH
Where CMD and \\fBnvidia\\-smi\\fR are looked for.
.SH FILES
.TP
.I libnvidia\\-ml.so.1
NVML, loaded from the loader's path (\\fB\\-\\-nvml\\-library\\fR names another);
else \\fBnvidia\\-smi\\fR runs as a child process.
.TP
.I $(e "$libdir/libgpuprofile_cupti.so")
The CUPTI plugin that \\fB\\-\\-engine trace\\fR and above load into CMD's CUDA
processes.
.TP
.I DIR/SESSION_ID/{device,scope,system}.log
A session recorded with \\fB\\-\\-log\\-dir DIR\\fR, read by \\fBreport\\fR,
\\fBexport\\fR and \\fBupload\\fR.
.TP
.I $(e "$docdir/")
The documentation: $(e cli.md) (the command), $(e report.md), $(e gpufl.md),
$(e concepts.md) (what the numbers mean), $(e python.md), $(e json-schema.md).
EOF
    awk '/^\.SH EXAMPLES$/ { p = 1 } p' "$tmp.body"
    printf '.SH SEE ALSO\n'
    printf 'nvidia\\-smi(1); %s.\n' "$(e "$docdir/cli.md")"
} >"$tmp"
rm -f "$tmp.body"
mv "$tmp" "$out"
trap - EXIT
rm -f "$help"
