// One HTTP request through the server's parser (http/request_parser) and the webhook's
// evaluation (signature, body, normalisation, trust), bytes in, no network. The first byte
// picks the limits and whether the target signs the body itself, so that random requests
// also get past the signature check into normalisation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crcrd/ingest/signature.hpp"
#include "crcrd/ingest/webhook.hpp"
#include "http/request_parser.hpp"

using namespace crcrd;

namespace {
const ingest::Policy& policy() {
    static const ingest::Policy p = [] {
        ingest::Policy pol;
        pol.keys.github.push_back({"fuzz", "fuzz-secret"});
        pol.keys.standard.push_back({"fuzz", "0123456789abcdef0123456789abcdef"});
        pol.trust.downstream_repo = "torch-spyre/torch-spyre";
        pol.trust.fork_labels = {"ciflow/crcr/spyre"};
        pol.concurrency = {{"pull_request", "pr"}, {"push", "branch"}};
        pol.post_merge = true;
        return pol;
    }();
    return p;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t mode = data[0];
    std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    http::ParserLimits limits;
    limits.max_header_bytes = (mode & 1) ? 1024 : 16 * 1024;
    limits.max_body_bytes = (mode & 2) ? 512 : 1024 * 1024;
    // Pipelined requests: each one in turn, as the server would.
    for (int i = 0; i < 4 && !bytes.empty(); ++i) {
        auto parsed = http::parse_request(bytes, limits);
        if (parsed.consumed == 0 || parsed.consumed > bytes.size()) break;
        bytes.remove_prefix(parsed.consumed);
        // As the server: an unframeable request is answered and the connection closed.
        if (parsed.refusal == http::ParseRefusal::bad_request || parsed.refusal == http::ParseRefusal::not_implemented) break;
        auto& req = parsed.request;
        if (parsed.refusal != http::ParseRefusal::none) req.refused_status = parsed.refusal == http::ParseRefusal::headers_too_large ? 431 : 413;
        if (mode & 4) {
            req.headers.emplace_back("X-Hub-Signature-256", ingest::sign_github("fuzz-secret", req.body));
        }
        auto ev = ingest::evaluate(req, policy(), 1'700'000'000);
        if (!ev.delivery) __builtin_trap();
        // A verdict and its answer agree: a rejection has a 4xx status, an acceptance has none.
        if (ev.rejection.status != 0 && (ev.rejection.status < 400 || ev.rejection.status > 499)) __builtin_trap();
        if (ev.rejection.status == 0 && !ev.event) __builtin_trap();
    }
    return 0;
}
