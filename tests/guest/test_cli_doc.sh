#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The manual and the bash completion.  build/xdpoff.8 (make man, from
# doc/xdpoff.8.rst) renders without a warning; its COMMANDS and OPTIONS
# document every command and option `xdpoff help` lists, and no other,
# with the same defaults and exit codes; packaging/xdpoff.bash-completion
# completes the commands, each command's options, the devices attach can
# take and the attached ones, before and after an attach.
set -u
. "$(dirname "$0")/../lib/lib.sh"

MAN_PAGE=$BUILD/xdpoff.8
COMPLETION=$XDPOFF_ROOT/packaging/xdpoff.bash-completion
RX=eth1
# man-db runs groff under a seccomp filter; nothing here needs it.
export MAN_DISABLE_SECCOMP=1
ALL_TESTS="
	man_renders
	man_matches_help
	bash_completion
"

cleanup() {
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
}
trap cleanup EXIT

# words LIST: LIST sorted, one line, single spaces.
words() { tr ' ' '\n' <<<"$*" | sed '/^$/d' | sort -u | xargs; }

# read_man: MAN_TXT, the page as text, wide enough that no entry wraps,
# overstrikes removed.
read_man() {
	MAN_TXT=$(MANWIDTH=400 man -l "$MAN_PAGE" 2>/dev/null | sed 's/.\x08//g')
}
# section NAME: the lines of that section of the rendered page.
section() { awk -v s="$1" '/^[A-Z]/ { f = ($0 == s); next } f' <<<"$MAN_TXT"; }

# read_help: HELP, xdpoff help's text, and the commands, long and short
# options it lists; fails as xdpoff help did.
read_help() {
	local rc
	HELP=$("$XDPOFF" help)
	rc=$?
	HELP_CMDS=$(help_block Commands | awk '/^  [a-z]/ { print $1 }' | xargs)
	HELP_LONG=$(grep -o -- '--[a-z][a-z-]*' <<<"$HELP" | sort -u | xargs)
	HELP_SHORT=$(help_block Options | grep -oE -- '(^|[ ,])-[a-z]\b' | tr -d ' ,' | sort -u | xargs)
	return $rc
}
# help_block TITLE: the lines of "TITLE:" up to the next empty line.
help_block() { awk -v t="$1:" '$0 == t { f = 1; next } /^$/ { f = 0 } f' <<<"$HELP"; }
# default_of TEXT OPTION: the N of the first "default N" in OPTION's entry.
default_of() {
	awk -v o="$2" '
		$1 == o || $1 == o "," || $2 == o { f = 1 }
		f && /^ *-/ && $1 != o && $1 != o "," && $2 != o { f = 0 }
		f' <<<"$1" | grep -o 'default [0-9]*' | head -n1 | cut -d' ' -f2
}
# complete_words WORD...: what the completion offers for the command line
# WORD... (the last word being completed), sorted, on one line.
complete_words() {
	(
		. "$COMPLETION" || exit 1
		COMP_WORDS=("$@")
		COMP_CWORD=$(( $# - 1 ))
		COMP_LINE="$*"
		_xdpoff
		printf '%s\n' "${COMPREPLY[@]}"
	) | sort -u | xargs
}
# The devices attach can take: /sys/class/net but lo, minus the attached.
attachable() {
	local d
	for d in /sys/class/net/*; do
		d=${d##*/}
		[ "$d" != lo ] && [ ! -d "$PIN/$d" ] && echo "$d"
	done | xargs
}
attached() { ls "$PIN" 2>/dev/null | xargs; }

# The manual renders.
man_renders() {
	if ! command -v man >/dev/null; then
		not_ok "man is installed (scripts/deps.sh: man-db)"
	elif [ ! -s "$MAN_PAGE" ]; then
		not_ok "the manual is built: $MAN_PAGE (make man)"
	else
		ok "the manual is built, man is installed"
	fi
	# As lintian checks a manual page: groff's warnings, on stderr.
	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z "$MAN_PAGE" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		ok "man --warnings -l xdpoff.8: no warning"
	else
		not_ok "man --warnings -l xdpoff.8: no warning"
		{ echo "man exited with $rc:"; printf '%s\n' "$out"; } | diag
	fi
	check_eq "its header: xdpoff, section 8" "XDPOFF 8" \
		"$(sed -n 's/^\.TH \([^ ]*\) \([0-9]\).*/\1 \2/p' "$MAN_PAGE" | tr -d '"')"

	read_man
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS OUTPUT FILES "EXIT STATUS" \
		EXAMPLES "SEE ALSO"; do
		if [ -n "$(section "$s" | tr -d ' \n')" ]; then
			ok "the manual has a section $s"
		else
			not_ok "the manual has a section $s"
		fi
	done
}

# xdpoff help and the manual agree.
man_matches_help() {
	read_man
	read_help
	check_eq "xdpoff help exits 0" 0 $?
	# The entries of COMMANDS are its lines "xdpoff CMD ..." at the term indent.
	MAN_CMDS=$(section COMMANDS | sed -n 's/^       xdpoff \([a-z]*\).*/\1/p' | xargs)
	# The entries of OPTIONS: its lines "-x, --xxx ..." at the term indent.
	MAN_OPT_TERMS=$(section OPTIONS | grep -E '^       -')
	MAN_LONG=$(grep -o -- '--[a-z][a-z-]*' <<<"$MAN_OPT_TERMS" | sort -u | xargs)
	MAN_SHORT=$(grep -oE -- '(^|[ ,])-[a-z]\b' <<<"$MAN_OPT_TERMS" | tr -d ' ,' | sort -u | xargs)
	# Every long option named anywhere in COMMANDS and OPTIONS.
	MAN_ANY_LONG=$( { section COMMANDS; section OPTIONS; } | grep -o -- '--[a-z][a-z-]*' | sort -u | xargs)

	if [ "$(wc -w <<<"$HELP_CMDS")" -ge 4 ] && [ "$(wc -w <<<"$HELP_LONG")" -ge 3 ]; then
		ok "xdpoff help lists commands and long options"
	else
		not_ok "xdpoff help lists commands and long options"
		printf 'commands: %s\nlong options: %s\n%s\n' "$HELP_CMDS" "$HELP_LONG" "$HELP" | diag
	fi
	check_eq "the manual's COMMANDS document the commands of xdpoff help, and no other" \
		"$(words "$HELP_CMDS")" "$(words "$MAN_CMDS")"
	check_eq "the manual's OPTIONS have an entry for each long option of xdpoff help, and no other" \
		"$HELP_LONG" "$MAN_LONG"
	check_eq "the manual's OPTIONS have an entry for each short option of xdpoff help, and no other" \
		"$HELP_SHORT" "$MAN_SHORT"
	extra=""
	for o in $MAN_ANY_LONG; do
		[[ " $HELP_LONG " == *" $o "* ]] || extra="$extra $o"
	done
	check_eq "COMMANDS and OPTIONS name no long option xdpoff help does not list" "" "$(words "$extra")"

	# The arguments of each command: help's "CMD ARGS" line, the manual's entry.
	for c in $HELP_CMDS; do
		h=$(help_block Commands | awk -v c="$c" '/^  [a-z]/ && $1 == c { $1 = ""; print }' | xargs)
		m=$(section COMMANDS | awk -v c="$c" '/^       xdpoff / && $2 == c { $1 = $2 = ""; print }' | xargs)
		check_eq "xdpoff $c: the same arguments in help and in the manual" "$h" "$m"
	done

	# The defaults: "(default N)" of each option, in help and in OPTIONS.
	for o in $HELP_LONG; do
		h=$(default_of "$(help_block Options)" "$o")
		[ -n "$h" ] || continue
		m=$(default_of "$(section OPTIONS)" "$o")
		check_eq "$o: the same default in help and in the manual" "$h" "$m"
	done
	check_eq "exit codes: help's and the manual's EXIT STATUS" \
		"$(sed -n 's/^Exit status: //p' <<<"$HELP" | grep -oE '\b[0-9]+ [a-z]' | cut -d' ' -f1 | xargs)" \
		"$(section "EXIT STATUS" | sed -n 's/^       \([0-9]\+\) .*/\1/p' | xargs)"
}

# The bash completion.
bash_completion() {
	read_help
	check_eq "the completion registers _xdpoff for xdpoff" "complete -F _xdpoff xdpoff" \
		"$(bash -c '. "$1" && complete -p xdpoff' - "$COMPLETION" 2>&1)"
	check_eq "xdpoff <TAB>: the commands" "$(words "$HELP_CMDS")" "$(complete_words xdpoff "")"
	check_eq "xdpoff a<TAB>: attach" "attach" "$(complete_words xdpoff a)"
	GLOBAL_LONG=$(help_block Options | sed -n 's/^  -[a-z], \(--[a-z-]*\).*/\1/p' | xargs)
	for c in $HELP_CMDS; do
		o=$(help_block Commands | awk -v c="$c" '/^  [a-z]/ && $1 == c' |
			grep -o -- '--[a-z][a-z-]*' | xargs)
		check_eq "xdpoff $c --<TAB>: $c's options, and the global ones" \
			"$(words "$o $GLOBAL_LONG")" "$(complete_words xdpoff "$c" --)"
	done
	check_eq "xdpoff attach --max-rules <TAB>: nothing (a number)" "" \
		"$(complete_words xdpoff attach --max-rules "")"
	check_eq "xdpoff attach --mode <TAB>: the modes" "native skb" \
		"$(complete_words xdpoff attach --mode "")"
	check_eq "xdpoff attach --mode s<TAB>: skb" "skb" \
		"$(complete_words xdpoff attach --mode s)"

	load_module
	check_eq "before: no device attached" "" "$(attached)"
	BEFORE=$(attachable)
	if [[ " $BEFORE " == *" $RX "* ]]; then
		ok "the guest has $RX to attach ($BEFORE)"
	else
		not_ok "the guest has $RX to attach ($BEFORE)"
	fi
	check_eq "xdpoff attach <TAB>: every device but lo" "$BEFORE" "$(complete_words xdpoff attach "")"
	check_eq "xdpoff -v attach <TAB>: the same" "$BEFORE" "$(complete_words xdpoff -v attach "")"
	check_eq "xdpoff detach <TAB>: nothing attached, nothing offered" "" \
		"$(complete_words xdpoff detach "")"
	check_eq "xdpoff show <TAB>: nothing" "" "$(complete_words xdpoff show "")"

	check "xdpoff attach $RX" "$XDPOFF" attach $RX
	check_eq "xdpoff detach <TAB>: $RX only" "$RX" "$(complete_words xdpoff detach "")"
	check_eq "xdpoff detach ${RX:0:2}<TAB>: $RX" "$RX" "$(complete_words xdpoff detach "${RX:0:2}")"
	check_eq "xdpoff show <TAB>: $RX only" "$RX" "$(complete_words xdpoff show "")"
	check_eq "xdpoff attach <TAB>: the others" \
		"$(tr ' ' '\n' <<<"$BEFORE" | grep -vx "$RX" | xargs)" "$(complete_words xdpoff attach "")"
	check_eq "... what attachable() says too" "$(attachable)" "$(complete_words xdpoff attach "")"
	check_eq "xdpoff detach $RX <TAB>: nothing more" "" "$(complete_words xdpoff detach $RX "")"
	check_eq "xdpoff show $RX <TAB>: show's options" "--json --watch" "$(complete_words xdpoff show $RX "")"

	check "xdpoff detach $RX" "$XDPOFF" detach $RX
	check_eq "after: xdpoff detach <TAB>: nothing" "" "$(complete_words xdpoff detach "")"
	check_eq "after: xdpoff attach <TAB>: every device but lo again" "$BEFORE" \
		"$(complete_words xdpoff attach "")"
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
}

tests_run
