#pragma once
// Result<T>: an expected failure as a value (STYLE.md "Errors").

#include <string>
#include <utility>
#include <variant>

#include "crcrd/core/vocab.hpp"

namespace crcrd {

/// What failed, for callers to act on; its name (Vocab<Errc>) is the stable machine word the
/// admin API and crcrctl print as "code".
enum class Errc {
    bad_request,
    unauthorized,
    forbidden,
    not_found,
    method_not_allowed,
    conflict,
    overloaded,
    unavailable,
    internal,
    config,
    listen,
    io,
    exec,
    infra,
    infra_error,
    junit,
    git,
    network,
    auth,
    github_api,
    github_app,
    github_auth,
    relay_token,
    report_file,
    slurm,
    bad_cron,
    bad_duration,
    bad_spec,
    bad_unit,
    bad_url,
    invalid_sha,
    rules,
    pattern,
    storage,
    storage_full,
    storage_busy,
    storage_readonly,
    storage_version,
    corrupt,
    locked,
    bad_size
};

template <>
struct Vocab<Errc> {
    static constexpr std::array<std::string_view, 41> names{"bad_request",
                                                            "unauthorized",
                                                            "forbidden",
                                                            "not_found",
                                                            "method_not_allowed",
                                                            "conflict",
                                                            "overloaded",
                                                            "unavailable",
                                                            "internal",
                                                            "config",
                                                            "listen",
                                                            "io",
                                                            "exec",
                                                            "infra",
                                                            "infra_error",
                                                            "junit",
                                                            "git",
                                                            "network",
                                                            "auth",
                                                            "github_api",
                                                            "github_app",
                                                            "github_auth",
                                                            "relay_token",
                                                            "report_file",
                                                            "slurm",
                                                            "bad_cron",
                                                            "bad_duration",
                                                            "bad_spec",
                                                            "bad_unit",
                                                            "bad_url",
                                                            "invalid_sha",
                                                            "rules",
                                                            "pattern",
                                                            "storage",
                                                            "storage_full",
                                                            "storage_busy",
                                                            "storage_readonly",
                                                            "storage_version",
                                                            "corrupt",
                                                            "locked",
                                                            "bad_size"};
};

CRCRD_VOCAB_JSON(Errc)

/// A failure that callers can act on: `code` says what failed, `message` is for humans and
/// never holds a secret.
struct Error {
    Errc code = Errc::internal;
    std::string message;
};

/// Either a value or an Error. Accessing the wrong alternative is a broken invariant and
/// throws std::bad_variant_access.
template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : m_v(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : m_v(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(m_v); }
    const T& value() const& { return std::get<0>(m_v); }
    T&& value() && { return std::get<0>(std::move(m_v)); }
    const Error& error() const { return std::get<1>(m_v); }
    /// The value, or `fallback` when this holds an error.
    T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

  private:
    std::variant<T, Error> m_v;
};

/// Success without a value.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(Errc code, std::string message) {
    return Error{code, std::move(message)};
}

}  // namespace crcrd
