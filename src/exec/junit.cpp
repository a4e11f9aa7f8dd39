// JUnit XML is read with pugixml (Debian libpugixml-dev): entities, CDATA and attributes need
// a real XML parser, and its parse errors carry the offset an operator needs.
#include "crcrd/exec/junit.hpp"

#include <pugixml.hpp>

#include <algorithm>

#include "crcrd/core/files.hpp"

namespace crcrd::exec {

namespace {

std::string clip(std::string s) {
    if (s.size() > 4096) s.resize(4096);
    return s;
}

/// Suites nest a few levels in practice; a file nesting thousands deep is refused, not
/// followed down the stack.
constexpr int k_max_depth = 64;
constexpr std::size_t k_max_entries = 100'000;       // names in the folder, any kind
constexpr std::size_t k_max_files = 10'000;          // JUnit files
constexpr std::uint64_t k_max_bytes = 256ULL << 20;  // all of them together

bool collect(const pugi::xml_node& node, std::vector<TestResult>& out, int depth = 0) {
    if (depth > k_max_depth) return false;
    for (const auto& child : node.children()) {
        std::string tag = child.name();
        if (tag == "testsuite" || tag == "testsuites") {
            if (!collect(child, out, depth + 1)) return false;
            continue;
        }
        if (tag != "testcase") continue;
        TestResult t;
        std::string file = child.attribute("file").as_string();
        std::string cls = child.attribute("classname").as_string();
        std::string name = child.attribute("name").as_string();
        if (!file.empty()) {
            // xunit1: classname "test.test_ops.TestX" and file "test/test_ops.py" -> the class is
            // what follows the module's dotted path.
            std::string module = file.substr(0, file.rfind(".py"));
            std::replace(module.begin(), module.end(), '/', '.');
            std::string klass = cls.rfind(module, 0) == 0
                                    ? cls.substr(std::min(cls.size(), module.size() + 1))
                                    : cls;
            t.name = file + (klass.empty() ? "" : "::" + klass) + "::" + name;
        } else {
            t.name = cls.empty() ? name : cls + "::" + name;
        }
        t.duration_s = child.attribute("time").as_double(0.0);
        t.outcome = TestOutcome::passed;
        for (const char* bad : {"failure", "error"}) {
            if (auto f = child.child(bad)) {
                t.outcome = TestOutcome::failed;
                std::string msg = f.attribute("message").as_string();
                t.message = clip(msg.empty() ? f.text().as_string() : msg);
                break;
            }
        }
        if (t.outcome == TestOutcome::passed) {
            if (auto s = child.child("skipped")) {
                t.outcome = TestOutcome::skipped;
                t.message = clip(s.attribute("message").as_string());
            }
        }
        out.push_back(std::move(t));
    }
    return true;
}

}  // namespace

Result<std::vector<TestResult>> parse_junit(const std::string& xml,
                                            const std::string& source_name) {
    pugi::xml_document doc;
    auto parsed = doc.load_buffer(xml.data(), xml.size());
    if (!parsed) {
        return make_error(Errc::junit, source_name + ": malformed XML at offset " +
                                           std::to_string(parsed.offset) + ": " +
                                           parsed.description());
    }
    auto root = doc.document_element();
    std::string tag = root.name();
    if (tag != "testsuites" && tag != "testsuite") {
        return make_error(Errc::junit, source_name + ": root element <" + tag +
                                           "> is not <testsuites> or <testsuite>");
    }
    std::vector<TestResult> out;
    if (!collect(tag == "testsuite" ? doc : root, out)) {
        return make_error(Errc::junit, source_name + ": test suites nested more than " +
                                           std::to_string(k_max_depth) + " deep");
    }
    return out;
}

Result<std::vector<TestResult>> read_junit_dir(const std::filesystem::path& dir) {
    // Everything here was written by the test: links, fifos, huge or countless files are an
    // answer (a JUnit error, so an infra_error), never a crash or a hang (docs/security.md).
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec), end;
    if (ec) return make_error(Errc::junit, "cannot read " + dir.string() + ": " + ec.message());
    std::size_t entries = 0;
    for (; it != end; it.increment(ec)) {
        if (++entries > k_max_entries) {
            return make_error(Errc::junit, "more than " + std::to_string(k_max_entries) +
                                               " entries in the JUnit folder");
        }
        if (it->path().extension() != ".xml") continue;
        std::error_code st_ec;
        const auto st = it->symlink_status(st_ec);  // a link is never followed
        if (st_ec || st.type() != std::filesystem::file_type::regular) {
            return make_error(Errc::junit,
                              it->path().filename().string() +
                                  " is not a regular file (a link, fifo, folder or device)");
        }
        if (files.size() == k_max_files) {
            return make_error(Errc::junit,
                              "more than " + std::to_string(k_max_files) + " JUnit files");
        }
        files.push_back(it->path());
    }
    if (ec) return make_error(Errc::junit, "cannot read " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    std::vector<TestResult> all;
    std::uint64_t total = 0;
    for (const auto& f : files) {
        auto text = read_untrusted_file(f, static_cast<std::size_t>(k_max_bytes - total));
        if (!text)
            return make_error(Errc::junit, text.error().message + " (JUnit files are read up to " +
                                               std::to_string(k_max_bytes >> 20) + " MiB in all)");
        total += text->size();
        auto r = parse_junit(*text, f.filename().string());
        if (!r) return r.error();
        all.insert(all.end(), std::make_move_iterator(r->begin()),
                   std::make_move_iterator(r->end()));
    }
    return all;
}

TestCounts count(const std::vector<TestResult>& results) {
    TestCounts c;
    for (const auto& t : results) {
        if (t.outcome == TestOutcome::passed)
            ++c.passed;
        else if (t.outcome == TestOutcome::skipped)
            ++c.skipped;
        else
            ++c.failed;
    }
    return c;
}

}  // namespace crcrd::exec
