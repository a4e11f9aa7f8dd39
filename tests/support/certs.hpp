#pragma once
// Certificates made at test time with the openssl CLI: a CA and a server certificate for
// 127.0.0.1 / localhost signed by it.

#include <filesystem>

namespace crcrd {

struct TestCerts {
    std::filesystem::path ca;    // trust this
    std::filesystem::path cert;  // server chain
    std::filesystem::path key;
};

/// Made once per test process, in a directory that lives as long as the process.
const TestCerts& test_certs();

}  // namespace crcrd
