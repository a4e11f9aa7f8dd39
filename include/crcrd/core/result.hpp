#pragma once
// Result<T>: an expected failure as a value (STYLE.md "Errors").

#include <string>
#include <utility>
#include <variant>

namespace crcrd {

/// A failure that callers can act on: `code` is a stable machine word ("bad_request",
/// "invalid_sha", "storage_full", ...), `message` is for humans and never holds a secret.
struct Error {
    std::string code;
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

inline Error make_error(std::string code, std::string message) {
    return Error{std::move(code), std::move(message)};
}

}  // namespace crcrd
