#!/usr/bin/env bash
# Module edges are enforced by include roots (CMakeLists.txt, crcrd_module); a relative or
# absolute path in an #include would walk around them. Usage: include_paths.sh <source dir>
set -u
cd "$1" || exit 2
if git ls-files 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' | xargs grep -nE '^\s*#\s*include\s*[<"](\.\.|/)'; then
  echo "^^ include module headers as \"crcrd/<module>/x.hpp\" (or \"<module>/x.hpp\" for a private one)" >&2
  exit 1
fi
exit 0
