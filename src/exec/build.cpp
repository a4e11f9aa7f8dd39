#include "crcrd/exec/build.hpp"

#include <algorithm>

#include <sys/stat.h>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/vcs/mirror.hpp"

namespace crcrd::exec {

namespace fs = std::filesystem;

namespace {

// Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
void field(std::string& out, std::string_view v) {
    out += std::to_string(v.size());
    out += ':';
    out += v;
    out += ';';
}

/// Whether the symbolic link at `link` (inside `top`) points, lexically, inside `top`.
bool link_stays_inside(const fs::path& top, const fs::path& link) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(link, ec);
    if (ec || target.is_absolute()) return false;
    const fs::path resolved = (link.parent_path() / target).lexically_normal();
    const fs::path rel = resolved.lexically_relative(top.lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
}

void remove_quietly(const fs::path& p) {
    std::error_code ec;
    fs::remove_all(p, ec);
}

}  // namespace

std::string build_key(const BuildKeyInputs& in) {
    std::string text = "crcrd-build-key;";
    field(text, std::to_string(in.version));
    field(text, in.upstream_sha);
    field(text, in.backend_sha);
    field(text, std::to_string(in.argv.size()));
    for (const auto& a : in.argv) field(text, a);
    field(text, in.command_sha256);
    field(text, std::to_string(in.key_env.size()));
    for (const auto& [name, value] : in.key_env) {
        field(text, name);
        field(text, value);
    }
    return crypto::sha256_hex(text);
}

BuildKeyInputs build_recipe(const config::BuildConfig& b,
                            const std::map<std::string, std::string>& execution_env,
                            const std::optional<fs::path>& backend_dir) {
    BuildKeyInputs in;
    in.argv = b.command;
    if (backend_dir) in.backend_sha = vcs::head_of(*backend_dir).value_or("");
    if (!b.command.empty()) {
        // The command's own file: a changed build script is a new key. (A program found on
        // PATH is read from the command's name only.)
        if (auto bytes = read_file(b.command.front(), 64u << 20))
            in.command_sha256 = crypto::sha256_hex(*bytes);
    }
    for (const auto& name : b.key_env) {
        auto it = execution_env.find(name);
        in.key_env.emplace_back(name, it == execution_env.end() ? std::string() : it->second);
    }
    return in;
}

fs::path build_dir(const fs::path& cache_dir, const std::string& key) {
    return cache_dir / key;
}

fs::path partial_dir(const fs::path& cache_dir, const std::string& key, std::int64_t job_id) {
    return cache_dir / ".partial" / (key + "." + std::to_string(job_id));
}

Result<fs::path> make_partial(const fs::path& cache_dir, const std::string& key,
                              std::int64_t job_id) {
    const fs::path out = partial_dir(cache_dir, key, job_id);
    remove_quietly(out);
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec)
        return make_error(Errc::infra_error, "cannot create " + out.string() + ": " + ec.message());
    return out;
}

Result<std::int64_t> publish_build(const fs::path& out, const fs::path& cache_dir,
                                   const std::string& key, std::int64_t max_entries) {
    auto refuse = [&](const std::string& why) -> Result<std::int64_t> {
        remove_quietly(out);
        return make_error(Errc::infra_error, "the build's output was not published: " + why);
    };
    std::int64_t size = 0;
    std::int64_t entries = 0;
    std::error_code ec;
    struct stat top {};
    if (::lstat(out.c_str(), &top) != 0 || !S_ISDIR(top.st_mode))
        return refuse(out.string() + " is no longer a folder");
    // Never follows a link: a link is checked, not entered.
    for (auto it = fs::recursive_directory_iterator(out, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        if (++entries > max_entries)
            return refuse("more than " + std::to_string(max_entries) + " entries");
        const fs::path& p = it->path();
        const std::string shown = (fs::path(key) / p.lexically_relative(out)).string();
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) return refuse("cannot read " + shown);
        if (S_ISLNK(st.st_mode)) {
            if (!link_stays_inside(out, p))
                return refuse("the symbolic link " + shown + " points outside the build (to " +
                              fs::read_symlink(p, ec).string() + ")");
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            size += static_cast<std::int64_t>(st.st_size);
        } else if (!S_ISDIR(st.st_mode)) {
            return refuse(shown + " is neither a file, a folder nor a link");
        }
    }
    if (ec) return refuse("cannot walk " + out.string() + ": " + ec.message());
    const fs::path dest = build_dir(cache_dir, key);
    // A folder left by an earlier publication whose row never became ready (a crash between
    // the rename and the commit): the new one replaces it.
    if (fs::exists(dest, ec)) remove_build(cache_dir, key);
    fs::rename(out, dest, ec);
    if (ec) return refuse("cannot rename to " + dest.string() + ": " + ec.message());
    return size;
}

void remove_build(const fs::path& cache_dir, const std::string& key) {
    const fs::path dest = build_dir(cache_dir, key);
    const fs::path aside = cache_dir / ".partial" / (key + ".removed");
    std::error_code ec;
    fs::create_directories(aside.parent_path(), ec);
    remove_quietly(aside);
    fs::rename(dest, aside, ec);
    remove_quietly(ec ? dest : aside);
}

void clean_partials(const fs::path& cache_dir, const std::vector<fs::path>& keep) {
    std::error_code ec;
    for (auto it = fs::directory_iterator(cache_dir / ".partial", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const auto& path = it->path();
        if (std::find(keep.begin(), keep.end(), path) == keep.end()) remove_quietly(path);
    }
    fs::remove(cache_dir / ".partial", ec);  // when nothing was kept
}

}  // namespace crcrd::exec
