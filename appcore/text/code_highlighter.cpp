// One scan per block: at each position the first rule that matches (comment, string, number,
// word) takes the span; words are looked up in the language's keyword set.
#include "appcore/text/code_highlighter.h"

#include <QHash>
#include <QSet>
#include <QStringList>

namespace {

struct Language {
  QStringList lineComments;          // "//", "#", "--"
  QString blockOpen, blockClose;     // "/*" "*/", "<!--" "-->"
  QString quotes;                    // characters that open a string
  bool tripleQuotes = false;         // Python's """ and '''
  bool markup = false;               // HTML/XML: <tags> marked
  QSet<QString> keywords;
};

QSet<QString> words(const char* list) {
  QSet<QString> set;
  for (const QString& w : QString::fromLatin1(list).split(QLatin1Char(' '), Qt::SkipEmptyParts)) set.insert(w);
  return set;
}

const QHash<QString, Language>& languages() {
  static const QHash<QString, Language> all = [] {
    QHash<QString, Language> l;
    const QString cQuotes = QStringLiteral("\"'");
    const char* cCommon = "if else for while do switch case default break continue return goto sizeof typedef struct union enum "
                          "const static extern void char short int long float double signed unsigned bool true false";
    l[QStringLiteral("c")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                              words(cCommon) + words("inline restrict volatile register auto NULL")};
    l[QStringLiteral("cpp")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                                words(cCommon) + words("class public private protected virtual override final template typename "
                                                       "namespace using new delete this nullptr auto constexpr consteval "
                                                       "noexcept try catch throw operator friend explicit mutable inline "
                                                       "static_cast dynamic_cast reinterpret_cast const_cast co_await "
                                                       "co_return co_yield concept requires std include define")};
    l[QStringLiteral("csharp")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                                   words(cCommon) + words("class public private protected internal virtual override "
                                                          "abstract sealed namespace using new this null var string object "
                                                          "try catch finally throw foreach in async await readonly get set")};
    l[QStringLiteral("java")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                                 words(cCommon) + words("class interface extends implements public private protected abstract "
                                                        "final new this super null try catch finally throw throws import "
                                                        "package instanceof var String byte synchronized")};
    const char* js = "var let const function return if else for while do switch case default break continue new this class "
                     "extends super import export from as async await yield try catch finally throw typeof instanceof "
                     "in of null undefined true false delete void static get set";
    l[QStringLiteral("javascript")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"),
                                       QStringLiteral("\"'`"), false, false, words(js)};
    l[QStringLiteral("typescript")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"),
                                       QStringLiteral("\"'`"), false, false,
                                       words(js) + words("interface type enum implements private public protected readonly "
                                                         "abstract declare namespace keyof any unknown never number string "
                                                         "boolean")};
    l[QStringLiteral("go")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), QStringLiteral("\"'`"),
                               false, false,
                               words("package import func return if else for range switch case default break continue go "
                                     "defer select chan map struct interface type var const nil true false make new len "
                                     "append string int int64 float64 bool byte error")};
    l[QStringLiteral("rust")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), QStringLiteral("\""),
                                 false, false,
                                 words("fn let mut const static if else match for while loop break continue return struct "
                                       "enum impl trait pub use mod crate self Self super where as in ref move async await "
                                       "unsafe dyn true false Some None Ok Err i32 i64 u8 u32 u64 usize f32 f64 bool str "
                                       "String Vec Option Result Box")};
    l[QStringLiteral("kotlin")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                                   words("fun val var if else when for while do return break continue class object "
                                         "interface data sealed open override private public internal protected import "
                                         "package null true false this super is in as try catch finally throw")};
    l[QStringLiteral("swift")] = {{QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), QStringLiteral("\""),
                                  false, false,
                                  words("func let var if else guard for while repeat return break continue switch case "
                                        "default class struct enum protocol extension import public private internal "
                                        "static self Self nil true false in try catch throw throws async await")};
    l[QStringLiteral("python")] = {{QStringLiteral("#")}, QString(), QString(), cQuotes, true, false,
                                   words("def class return if elif else for while break continue pass import from as "
                                         "with try except finally raise lambda yield global nonlocal assert del in is not "
                                         "and or None True False async await self print")};
    l[QStringLiteral("shell")] = {{QStringLiteral("#")}, QString(), QString(), cQuotes, false, false,
                                  words("if then else elif fi for in do done while until case esac function return "
                                        "export local readonly echo cd set unset source exit sudo")};
    l[QStringLiteral("sql")] = {{QStringLiteral("--")}, QStringLiteral("/*"), QStringLiteral("*/"), QStringLiteral("'\""),
                                false, false,
                                words("select from where insert into values update set delete create table drop alter "
                                      "index join left right inner outer on group by order having limit offset as and or "
                                      "not null primary key foreign references distinct union all case when then else end "
                                      "SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER "
                                      "INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT OFFSET AS AND OR "
                                      "NOT NULL PRIMARY KEY FOREIGN REFERENCES DISTINCT UNION ALL CASE WHEN THEN ELSE END")};
    l[QStringLiteral("json")] = {{}, QString(), QString(), QStringLiteral("\""), false, false, words("true false null")};
    l[QStringLiteral("yaml")] = {{QStringLiteral("#")}, QString(), QString(), cQuotes, false, false,
                                 words("true false null yes no")};
    l[QStringLiteral("css")] = {{}, QStringLiteral("/*"), QStringLiteral("*/"), cQuotes, false, false,
                                words("important inherit initial none auto")};
    l[QStringLiteral("html")] = {{}, QStringLiteral("<!--"), QStringLiteral("-->"), cQuotes, false, true, {}};
    return l;
  }();
  return all;
}

bool isWordStart(QChar c) { return c.isLetter() || c == QLatin1Char('_'); }
bool isWordChar(QChar c) { return c.isLetterOrNumber() || c == QLatin1Char('_'); }

}  // namespace

QString codeLanguage(const QString& fenceInfo) {
  static const QHash<QString, QString> aliases{
      {QStringLiteral("c"), QStringLiteral("c")},           {QStringLiteral("h"), QStringLiteral("c")},
      {QStringLiteral("cpp"), QStringLiteral("cpp")},       {QStringLiteral("c++"), QStringLiteral("cpp")},
      {QStringLiteral("cxx"), QStringLiteral("cpp")},       {QStringLiteral("hpp"), QStringLiteral("cpp")},
      {QStringLiteral("cuda"), QStringLiteral("cpp")},      {QStringLiteral("cs"), QStringLiteral("csharp")},
      {QStringLiteral("csharp"), QStringLiteral("csharp")}, {QStringLiteral("c#"), QStringLiteral("csharp")},
      {QStringLiteral("java"), QStringLiteral("java")},     {QStringLiteral("js"), QStringLiteral("javascript")},
      {QStringLiteral("javascript"), QStringLiteral("javascript")}, {QStringLiteral("jsx"), QStringLiteral("javascript")},
      {QStringLiteral("ts"), QStringLiteral("typescript")}, {QStringLiteral("typescript"), QStringLiteral("typescript")},
      {QStringLiteral("tsx"), QStringLiteral("typescript")}, {QStringLiteral("go"), QStringLiteral("go")},
      {QStringLiteral("golang"), QStringLiteral("go")},     {QStringLiteral("rust"), QStringLiteral("rust")},
      {QStringLiteral("rs"), QStringLiteral("rust")},       {QStringLiteral("kotlin"), QStringLiteral("kotlin")},
      {QStringLiteral("kt"), QStringLiteral("kotlin")},     {QStringLiteral("swift"), QStringLiteral("swift")},
      {QStringLiteral("python"), QStringLiteral("python")}, {QStringLiteral("py"), QStringLiteral("python")},
      {QStringLiteral("python3"), QStringLiteral("python")}, {QStringLiteral("sh"), QStringLiteral("shell")},
      {QStringLiteral("bash"), QStringLiteral("shell")},    {QStringLiteral("shell"), QStringLiteral("shell")},
      {QStringLiteral("zsh"), QStringLiteral("shell")},     {QStringLiteral("console"), QStringLiteral("shell")},
      {QStringLiteral("sql"), QStringLiteral("sql")},       {QStringLiteral("json"), QStringLiteral("json")},
      {QStringLiteral("yaml"), QStringLiteral("yaml")},     {QStringLiteral("yml"), QStringLiteral("yaml")},
      {QStringLiteral("css"), QStringLiteral("css")},       {QStringLiteral("html"), QStringLiteral("html")},
      {QStringLiteral("xml"), QStringLiteral("html")},      {QStringLiteral("svg"), QStringLiteral("html")}};
  // The info string's first word names the language ("python title=x.py").
  const QString first = fenceInfo.trimmed().section(QLatin1Char(' '), 0, 0).toLower();
  return aliases.value(first);
}

std::vector<CodeToken> highlightCode(const QString& language, const QString& code) {
  std::vector<CodeToken> out;
  const auto it = languages().find(language);
  if (it == languages().end()) return out;
  const Language& lang = *it;
  const int n = static_cast<int>(code.size());
  auto at = [&](int i, const QString& s) { return !s.isEmpty() && QStringView(code).mid(i).startsWith(s); };
  int i = 0;
  while (i < n) {
    const QChar c = code[i];
    // Comments: to the end of the line, or to their closing mark (or the code's end).
    bool lineComment = false;
    for (const QString& mark : lang.lineComments)
      // '#' in shell only where a word starts ("$#", "a#b" are not comments).
      if (at(i, mark) && !(language == QLatin1String("shell") && i > 0 && !code[i - 1].isSpace())) lineComment = true;
    if (lineComment) {
      int end = static_cast<int>(code.indexOf(QLatin1Char('\n'), i));
      if (end < 0) end = n;
      out.push_back({i, end - i, CodeTokenKind::comment});
      i = end;
      continue;
    }
    if (at(i, lang.blockOpen)) {
      int end = static_cast<int>(code.indexOf(lang.blockClose, i + static_cast<int>(lang.blockOpen.size())));
      end = end < 0 ? n : end + static_cast<int>(lang.blockClose.size());
      out.push_back({i, end - i, CodeTokenKind::comment});
      i = end;
      continue;
    }
    if (lang.markup && c == QLatin1Char('<')) {
      // A tag's name: <div, </div, <?xml
      int end = i + 1;
      while (end < n && (code[end] == QLatin1Char('/') || code[end] == QLatin1Char('?') || code[end] == QLatin1Char('!'))) ++end;
      while (end < n && (isWordChar(code[end]) || code[end] == QLatin1Char('-') || code[end] == QLatin1Char(':'))) ++end;
      if (end > i + 1) {
        out.push_back({i, end - i, CodeTokenKind::tag});
        i = end;
        continue;
      }
    }
    if (lang.quotes.contains(c)) {
      const bool triple = lang.tripleQuotes && at(i, QString(3, c));
      const QString close = triple ? QString(3, c) : QString(c);
      int j = i + static_cast<int>(close.size());
      while (j < n) {
        if (code[j] == QLatin1Char('\\')) {
          j += 2;
          continue;
        }
        if (at(j, close)) {
          j += static_cast<int>(close.size());
          break;
        }
        // A single-quoted string ends with its line (an apostrophe in a comment-less language).
        if (!triple && code[j] == QLatin1Char('\n') && c != QLatin1Char('`')) break;
        ++j;
      }
      j = std::min(j, n);
      out.push_back({i, j - i, CodeTokenKind::string});
      i = j;
      continue;
    }
    if (c.isDigit() && (i == 0 || !isWordChar(code[i - 1]))) {
      int j = i + 1;
      while (j < n && (code[j].isLetterOrNumber() || code[j] == QLatin1Char('.') || code[j] == QLatin1Char('_'))) ++j;
      out.push_back({i, j - i, CodeTokenKind::number});
      i = j;
      continue;
    }
    if (isWordStart(c)) {
      int j = i + 1;
      while (j < n && isWordChar(code[j])) ++j;
      if (lang.keywords.contains(code.mid(i, j - i))) out.push_back({i, j - i, CodeTokenKind::keyword});
      i = j;
      continue;
    }
    ++i;
  }
  return out;
}
