#!/bin/bash
# alicloud-kubeadm saved-command parameters. Cloud Assistant substitutes every `{{name}}` of a saved command as
# text, whatever bytes the invoker sends (quotes, line breaks, `$()`, backticks, NUL, kilobytes), and anyone with
# ecs:InvokeCommand on the command can send anything. So no `{{name}}` stands in code: they are the last lines of
# the command, after its final `exit`, which bash never reads (it parses and runs a script one command at a time,
# and `exit` ends it); the command reads them from its own file as data, before it does anything else.
# src/shell/render.ts puts this file right after the header of every saved command, and at its end:
#   exit
#   # alicloud-kubeadm parameters: data, never run
#   # AK_NODE={{node}}
#   ...
# See docs/security.md#saved-command-parameters.

# ak_parameters NAME PATTERN WHAT...: set each NAME (readonly) from the line `# NAME=value` after the marker, in this
# order and nothing else after them; stop unless every value matches its PATTERN (extended regex), naming the
# parameter and WHAT it must be, never the value.
ak_parameters() {
  local self=$0 marker='# alicloud-kubeadm parameters: data, never run' start count name pattern what line value i=0 LC_ALL=C
  ak_parameters_fail() {
    printf 'error: %s\n' "$*" >&2
    exit 1
  }
  if [ ! -f "$self" ] || [ ! -r "$self" ]; then
    ak_parameters_fail "cannot read this command's parameters: it must run from its script file, as Cloud Assistant runs it"
  fi
  start=$(grep -a -n -x -F -m 1 -e "$marker" -- "$self" | cut -d: -f1)
  [ -n "$start" ] || ak_parameters_fail "this command has no parameter lines (damaged?)"
  # A NUL byte anywhere can only come from a value (bash would drop it silently when reading the line).
  [ "$(tr -d '\000' <"$self" | wc -c)" -eq "$(wc -c <"$self")" ] || ak_parameters_fail "a parameter holds a NUL byte"
  count=$(($(wc -l <"$self") - start))
  [ "$count" -eq $(($# / 3)) ] ||
    ak_parameters_fail "expected $(($# / 3)) parameter lines, found ${count}: a value holds a line break"
  while [ $# -ge 3 ]; do
    name=$1 pattern=$2 what=$3
    shift 3
    i=$((i + 1))
    line=$(sed -n "$((start + i))p" -- "$self")
    [[ $line == "# ${name}="* ]] || ak_parameters_fail "parameter line ${i} is not ${name}"
    value=${line#"# ${name}="}
    [[ $value =~ $pattern ]] || ak_parameters_fail "parameter ${name#AK_} must be ${what}"
    printf -v "$name" '%s' "$value"
    readonly "${name?}"
  done
}
