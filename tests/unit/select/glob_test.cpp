#include <gtest/gtest.h>

#include "crcrd/select/glob.hpp"

namespace crcrd::select {
namespace {

struct Case {
    const char* pattern;
    const char* path;
    bool match;
};

const Case k_cases[] = {
    // `**` spans segments, including none.
    {"aten/src/ATen/native/**", "aten/src/ATen/native/BinaryOps.cpp", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/native/cuda/Loops.cuh", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/native", true},
    {"aten/src/ATen/native/**", "aten/src/ATen/core/Tensor.h", false},
    {"**/*.md", "README.md", true},
    {"**/*.md", "docs/source/notes/x.md", true},
    {"**/*.md", "docs/source/notes/x.mdx", false},
    {"docs/**", "docs/source/index.rst", true},
    {"docs/**", "mydocs/index.rst", false},
    {"torch/**/test_*.py", "torch/test_x.py", true},
    {"torch/**/test_*.py", "torch/a/b/test_x.py", true},
    {"torch/**/test_*.py", "torch/a/b/x_test.py", false},
    {"**", "anything/at/all", true},
    // `*` and `?` stay inside one segment.
    {"c10/core/*", "c10/core/TensorImpl.h", true},
    {"c10/core/*", "c10/core/impl/LocalDispatchKeySet.h", false},
    {"torch/*.py", "torch/functional.py", true},
    {"torch/*.py", "torch/nn/functional.py", false},
    {"torch/_inductor/*.py", "torch/_inductor/codegen/wrapper.py", false},
    {"test/test_?.py", "test/test_a.py", true},
    {"test/test_?.py", "test/test_ab.py", false},
    {"test/test_?.py", "test/test_/.py", false},
    {"*", "setup.py", true},
    {"*", "torch/setup.py", false},
    {"a**b", "axxb", true},  // "**" inside a segment is "*"
    {"a**b", "ax/xb", false},
    // Anchored at the root.
    {"core/**", "c10/core/TensorImpl.h", false},
    {"setup.py", "tools/setup.py", false},
    {"setup.py", "setup.py", true},
    // Literal characters, including ones that are special elsewhere.
    {"third_party/[x]/*", "third_party/[x]/a", true},
    {"third_party/[x]/*", "third_party/x/a", false},
    {"a.b", "aXb", false},
};

TEST(Glob, Table) {
    for (const auto& c : k_cases) {
        EXPECT_EQ(Glob(c.pattern).matches(c.path), c.match) << c.pattern << " vs " << c.path;
    }
}

TEST(Glob, Segments) {
    EXPECT_TRUE(match_segment("*.cpp", "BinaryOps.cpp"));
    EXPECT_TRUE(match_segment("*Ops*", "BinaryOps.cpp"));
    EXPECT_FALSE(match_segment("*.cpp", "BinaryOps.cu"));
    EXPECT_TRUE(match_segment("", ""));
    EXPECT_FALSE(match_segment("", "x"));
}

}  // namespace
}  // namespace crcrd::select
