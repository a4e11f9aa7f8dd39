#include "support/certs.hpp"

#include <memory>
#include <stdexcept>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

const TestCerts& test_certs() {
    static std::unique_ptr<TempDir> dir;
    static TestCerts certs = [] {
        dir = std::make_unique<TempDir>();
        auto d = dir->path();
        TestCerts c{d / "ca.crt", d / "tls.crt", d / "tls.key", d / "ca.key"};
        write_file(d / "san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        std::string out;
        auto must = [&](const std::vector<std::string>& argv) {
            if (run_command(argv, &out) != 0) throw std::runtime_error("openssl failed: " + out);
        };
        must({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-nodes", "-days", "2", "-subj", "/CN=crcrd test CA", "-keyout",
              (d / "ca.key").string(), "-out", c.ca.string()});
        must({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-subj", "/CN=127.0.0.1", "-keyout", c.key.string(), "-out",
              (d / "tls.csr").string()});
        must({"openssl", "x509", "-req", "-in", (d / "tls.csr").string(), "-CA", c.ca.string(),
              "-CAkey", (d / "ca.key").string(), "-CAcreateserial", "-days", "2", "-extfile",
              (d / "san.ext").string(), "-out", c.cert.string()});
        return c;
    }();
    return certs;
}

std::pair<std::filesystem::path, std::filesystem::path> issue_server_cert(
    const std::filesystem::path& dir, const std::string& name, const std::string& cn) {
    const auto& ca = test_certs();
    std::filesystem::create_directories(dir);
    std::filesystem::path cert = dir / (name + ".crt"), key = dir / (name + ".key"),
                          csr = dir / (name + ".csr");
    write_file(dir / "san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    std::string out;
    auto must = [&](const std::vector<std::string>& argv) {
        if (run_command(argv, &out) != 0) throw std::runtime_error("openssl failed: " + out);
    };
    must({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
          "-subj", "/CN=" + cn, "-keyout", key.string(), "-out", csr.string()});
    must({"openssl", "x509", "-req", "-in", csr.string(), "-CA", ca.ca.string(), "-CAkey",
          ca.ca_key.string(), "-CAcreateserial", "-CAserial", (dir / "ca.srl").string(), "-days",
          "2", "-extfile", (dir / "san.ext").string(), "-out", cert.string()});
    return {cert, key};
}

}  // namespace crcrd
