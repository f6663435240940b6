# Sourced by the setup scripts: `find_python` prints a Python >= 3.12 (on
# PATH, else in pyenv's versions folders) or returns 1; gdm-concordia 2.4
# requires it.
is_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }

find_python() {
  local c
  for c in python3.13 python3.12 python3 python; do
    if command -v "$c" >/dev/null 2>&1 && is_ok "$(command -v "$c")"; then
      command -v "$c"; return 0
    fi
  done
  local roots=()
  command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root)/versions")
  roots+=("$HOME/.pyenv/versions" /opt/pyenv/versions /usr/local/pyenv/versions)
  for root in "${roots[@]}"; do
    for c in $(ls -d "$root"/3.* 2>/dev/null | sort -rV); do
      if [ -x "$c/bin/python3" ] && is_ok "$c/bin/python3"; then
        echo "$c/bin/python3"; return 0
      fi
    done
  done
  return 1
}
