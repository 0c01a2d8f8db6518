#pragma once
// A small syntax highlighter for the code blocks of replies: keywords, strings, comments and
// numbers for the languages models write most (C, C++, C#, Java, JavaScript, TypeScript, Go,
// Rust, Kotlin, Swift, Python, shell, SQL, JSON, YAML, CSS, HTML/XML). A lexer of a few rules
// per language, not a parser: what it marks is what a reader's eye looks for. The transcript's
// document takes its marks as character formats (a QSyntaxHighlighter colours one whole
// document; a reply's code is inserted into the transcript as a fragment, where that would not
// follow it).

#include <QString>

#include <vector>

enum class CodeTokenKind { keyword, string, comment, number, tag };

struct CodeToken {
  int start = 0;
  int length = 0;
  CodeTokenKind kind = CodeTokenKind::keyword;
  bool operator==(const CodeToken&) const = default;
};

// The language a fence names, in the highlighter's terms ("py" -> "python", "c++" -> "cpp",
// "sh" -> "shell", ...); empty when it does not know it.
QString codeLanguage(const QString& fenceInfo);

// The marked spans of `code` (in order, not overlapping); none for a language it does not know.
std::vector<CodeToken> highlightCode(const QString& language, const QString& code);
