#include "crcrd/core/compress.hpp"

#include <zstd.h>

#include <stdexcept>

namespace crcrd {

std::string compress(std::string_view data) {
    // One context per thread: creating one per call allocates and clears its tables.
    struct Ctx {
        ZSTD_CCtx* p = ZSTD_createCCtx();
        ~Ctx() { ZSTD_freeCCtx(p); }
    };
    thread_local Ctx ctx;
    if (!ctx.p) throw std::runtime_error("zstd: out of memory");
    std::string out(ZSTD_compressBound(data.size()), '\0');
    std::size_t n = ZSTD_compressCCtx(ctx.p, out.data(), out.size(), data.data(), data.size(), 1);
    if (ZSTD_isError(n))
        throw std::runtime_error(std::string("zstd compress failed: ") + ZSTD_getErrorName(n));
    out.resize(n);
    return out;
}

Result<std::string> decompress(std::string_view frame, std::size_t max_size) {
    unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max_size) {
        return make_error(Errc::corrupt, "stored body is not a complete zstd frame");
    }
    std::string out(static_cast<std::size_t>(size), '\0');
    std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
    if (ZSTD_isError(n) || n != size)
        return make_error(Errc::corrupt, "stored body does not decompress");
    return out;
}

}  // namespace crcrd
