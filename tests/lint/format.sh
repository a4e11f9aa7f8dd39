#!/usr/bin/env bash
# The C++ of src/, include/, tests/ and bench/ is formatted as .clang-format says: any file
# clang-format would change fails, with the first places it would. `make format` fixes them.
# Usage: format.sh <source dir>
set -u
cd "$1" || exit 2
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (deploy/install-deps.sh installs it)" >&2; exit 1; }
out=$(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'bench/*.hpp' |
  xargs clang-format --dry-run -Werror 2>&1)
if [[ -n $out ]]; then
  echo "$out" | head -40 >&2
  echo "^^ $(grep -c 'error:' <<<"$out") places are not formatted as .clang-format says: run 'make format'" >&2
  exit 1
fi
exit 0
