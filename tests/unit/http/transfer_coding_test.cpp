// Which Transfer-Encoding the server reads (request_parser.hpp, transfer_coding_refusal): only
// chunked is implemented; anything else is a 501, or a 400 when the body cannot be framed.
#include <gtest/gtest.h>

#include "http/request_parser.hpp"

namespace crcrd::http {
namespace {

TEST(TransferCoding, OnlyChunkedAloneIsRead) {
    struct Case {
        const char* value;
        ParseRefusal want;
    };
    const Case cases[] = {
        {"chunked", ParseRefusal::none},
        {"Chunked", ParseRefusal::none},
        {"  chunked\t", ParseRefusal::none},
        {"chunked,", ParseRefusal::none},  // an empty list element is no coding (RFC 9110 5.6.1)
        {"gzip, chunked", ParseRefusal::not_implemented},
        {"deflate,chunked", ParseRefusal::not_implemented},
        {"gzip, identity, chunked", ParseRefusal::not_implemented},
        {"x-custom ;q=1, chunked", ParseRefusal::not_implemented},
        {"xchunked", ParseRefusal::bad_request},
        {"identity", ParseRefusal::bad_request},
        {"gzip", ParseRefusal::bad_request},
        {"chunked, gzip", ParseRefusal::bad_request},
        {"chunked, chunked", ParseRefusal::bad_request},
        {"chunked;ext=1", ParseRefusal::bad_request},
        {"", ParseRefusal::bad_request},
        {" , ", ParseRefusal::bad_request},
    };
    for (const auto& c : cases)
        EXPECT_EQ(transfer_coding_refusal(c.value), c.want) << "'" << c.value << "'";
}

TEST(TransferCoding, TheParserAnswersAsTheTableSays) {
    const std::string body = "\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    auto parse = [&](const std::string& te) {
        return parse_request("POST /webhook HTTP/1.1\r\nHost: x\r\n" + te + body, ParserLimits{})
            .refusal;
    };
    EXPECT_EQ(parse("Transfer-Encoding: chunked"), ParseRefusal::none);
    EXPECT_EQ(parse("Transfer-Encoding: gzip, chunked"), ParseRefusal::not_implemented);
    EXPECT_EQ(parse("Transfer-Encoding: xchunked"), ParseRefusal::bad_request);
    // Two lines are one list.
    EXPECT_EQ(parse("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked"),
              ParseRefusal::not_implemented);
    EXPECT_EQ(parse("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip"),
              ParseRefusal::bad_request);
    auto ok = parse_request(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked" + body, ParserLimits{});
    EXPECT_EQ(ok.request.body, "hello");
}

}  // namespace
}  // namespace crcrd::http
