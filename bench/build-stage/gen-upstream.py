#!/usr/bin/env python3
"""A PyTorch-like upstream for bench/run-build-bench.sh: FILES C++ files in 50 folders, a
Makefile that builds each into an object (out of tree) and all of them into a library, and a
history: a root commit, then COMMITS commits each editing EDITS files (a function body: a real
change that recompiles). Prints the SHAs of the commits after the root, one per line.

usage: gen-upstream.py DIR FILES COMMITS EDITS
"""
import os
import random
import subprocess
import sys

d, files, commits, edits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(33)


def git(*args):
    return subprocess.run(["git", "-C", d, "-c", "user.name=bench", "-c", "user.email=b@example.org",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def source(i, version):
    return (f"// generated: file {i}, version {version}\n#include <cstdint>\n"
            f"namespace ops{i % 50} {{\n"
            f"std::int64_t kernel_{i}(std::int64_t x) {{\n"
            f"    std::int64_t acc = {version};\n"
            f"    for (std::int64_t k = 0; k < x % 17; ++k) acc += (x ^ k) * {i % 13 + 1};\n"
            f"    return acc;\n}}\n}}\n")


os.makedirs(d, exist_ok=True)
subprocess.run(["git", "init", "--quiet", "-b", "main", d], check=True)
names = [f"aten/src/ATen/native/d{i % 50:02d}/op_{i:05d}.cpp" for i in range(files)]
for i, n in enumerate(names):
    os.makedirs(os.path.join(d, os.path.dirname(n)), exist_ok=True)
    with open(os.path.join(d, n), "w") as f:
        f.write(source(i, 0))
with open(os.path.join(d, "Makefile"), "w") as f:
    f.write("""# Out of tree: make -f $(SRC)/Makefile SRC=... OBJ=... -j N
SOURCES := $(shell cd $(SRC) && find aten -name '*.cpp' | sort)
OBJECTS := $(SOURCES:%.cpp=$(OBJ)/%.o)
CXX ?= g++
# The object list goes through a file: 5,000 paths are more than one shell argument may hold.
$(OBJ)/libtorch_bench.a: $(OBJECTS)
\t$(file >$(OBJ)/objects.txt,$(OBJECTS))
\trm -f $@ && ar qc $@ @$(OBJ)/objects.txt
$(OBJ)/%.o: $(SRC)/%.cpp
\t@mkdir -p $(dir $@)
\t$(CXX) -O1 -c $< -o $@
""")
git("add", "-A")
git("commit", "--quiet", "-m", "root")
shas = []
version = {}
for c in range(commits):
    for i in rng.sample(range(files), edits):
        version[i] = version.get(i, 0) + 1
        with open(os.path.join(d, names[i]), "w") as f:
            f.write(source(i, version[i]))
    git("commit", "--quiet", "-am", f"aten: change {edits} kernels ({c + 1})")
    shas.append(git("rev-parse", "HEAD"))
print("\n".join(shas))
