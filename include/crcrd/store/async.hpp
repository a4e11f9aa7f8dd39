#pragma once
// Awaiting the writer from a coroutine: the network thread submits work and resumes on its
// own executor once the group commit is durable, never blocking in between.

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <memory>
#include <optional>

#include "crcrd/store/writer.hpp"

namespace crcrd::store {

/// Runs `fn(Db&) -> T` on the writer; completes with (nullopt, value) once committed, or
/// (error, T{}) when the writer refused it ("overloaded") or the commit failed.
template <class T, class Fn, class Token>
auto async_write(Writer& writer, Fn fn, Token&& token) {
    return boost::asio::async_initiate<Token, void(std::optional<Error>, T)>(
        [&writer](auto handler, Fn work) {
            using H = decltype(handler);
            auto h = std::make_shared<H>(std::move(handler));
            auto value = std::make_shared<T>();
            auto ex = boost::asio::get_associated_executor(*h);
            bool queued = writer.submit(
                [work = std::move(work), value](Db& db) { *value = work(db); },
                [h, value, ex](Status s) {
                    std::optional<Error> err;
                    if (!s) err = s.error();
                    boost::asio::post(
                        ex, [h, value, err]() mutable { std::move (*h)(err, std::move(*value)); });
                });
            if (!queued) {
                boost::asio::post(ex, [h]() mutable {
                    std::move (*h)(Error{Errc::overloaded, "too many writes pending"}, T{});
                });
            }
        },
        token, std::move(fn));
}

}  // namespace crcrd::store
