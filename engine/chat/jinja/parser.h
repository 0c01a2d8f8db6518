#pragma once
// Jinja source to a tree (ast.h), with jinja2's grammar and operator precedence. What chat
// templates use is covered; anything else (include, extends, call blocks, an unknown filter or
// test) is an Error that names the construct and its line, at parse time.

#include <string_view>

#include "engine/chat/jinja/ast.h"

namespace pagedchat::jinja {

Body parse_template(std::string_view source);

}  // namespace pagedchat::jinja
