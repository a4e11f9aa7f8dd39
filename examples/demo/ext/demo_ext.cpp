// The demo backend's C++ extension: it calls into the upstream's ATen/demo/add.h, as a real
// backend's kernels call into ATen. A change of that header's signature breaks this build.
#include "ATen/demo/add.h"

extern "C" int demo_ext_add(int a, int b) {
    return at::demo::add(a, b);
}
