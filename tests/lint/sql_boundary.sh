#!/usr/bin/env bash
# SQLite belongs to `store`: outside src/store and include/crcrd/store no file of the daemon may
# hold SQL text, name SqlError, use the SQLite API or include the statement layer. Files still
# being moved are listed in ALLOWED; the list only shrinks. Usage: sql_boundary.sh <source dir>
set -u
cd "$1" || exit 2
ALLOWED=(
)
pattern='"(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|PRAGMA|BEGIN|SAVEPOINT|RELEASE) |SqlError|sqlite3|store/sqlite\.hpp|\bcached\(|\bdb(\.|->)prepare\('
status=0
while IFS= read -r f; do
  allowed=0
  for a in "${ALLOWED[@]}"; do [[ "$f" == "$a" ]] && allowed=1; done
  if ((allowed)); then continue; fi
  if grep -nE "$pattern" "$f"; then
    echo "^^ $f: SQL or the SQLite layer outside store/ (put it in a repository under src/store)" >&2
    status=1
  fi
done < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' | grep -vE '^(src/store/|include/crcrd/store/)')
for a in "${ALLOWED[@]}"; do
  if [[ -e "$a" ]] && ! grep -qE "$pattern" "$a"; then
    echo "$a no longer touches SQL: remove it from ALLOWED in $0" >&2
    status=1
  fi
done
exit $status
