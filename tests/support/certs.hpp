#pragma once
// Certificates made at test time with the openssl CLI: a CA and a server certificate for
// 127.0.0.1 / localhost signed by it.

#include <filesystem>
#include <string>
#include <utility>

namespace crcrd {

struct TestCerts {
    std::filesystem::path ca;    // trust this
    std::filesystem::path cert;  // server chain
    std::filesystem::path key;
    std::filesystem::path ca_key;  // to issue more certificates (issue_server_cert)
};

/// Made once per test process, in a directory that lives as long as the process.
const TestCerts& test_certs();

/// A new certificate for 127.0.0.1 with common name `cn`, signed by test_certs()'s CA, written
/// as `dir`/`name`.crt and `dir`/`name`.key. Returns {cert, key}.
std::pair<std::filesystem::path, std::filesystem::path> issue_server_cert(
    const std::filesystem::path& dir, const std::string& name, const std::string& cn);

}  // namespace crcrd
