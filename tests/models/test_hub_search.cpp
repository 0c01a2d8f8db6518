// Finding models on the hub: the search and tree answers in the real hub's JSON shapes (extra
// fields, LFS sizes, folders, split models, files that are not GGUF), the quantization a file's
// name says and whether it runs here (against the engine's own type table), the fit against
// memory at its edges, and both requests over HTTP against the fake hub on loopback (the words
// escaped, HF_TOKEN sent, a refusal said in words).
#include <QtTest>

#include "engine/common/error.h"
#include "models/hf_hub.h"
#include "models/hub_search.h"
#include "tests/support/fake_hub.h"

using namespace pagedchat;
using namespace pagedchat::models;

namespace {

// Two models as the hub lists them (fields trimmed to a few of the many it sends).
const char* const kSearchAnswer = R"([
  {"_id": "66f", "id": "bartowski/Llama-3.2-1B-Instruct-GGUF", "likes": 120, "downloads": 98765, "private": false,
   "tags": ["gguf", "llama", "text-generation"], "pipeline_tag": "text-generation", "library_name": "gguf",
   "createdAt": "2024-09-25T18:24:13.000Z", "modelId": "bartowski/Llama-3.2-1B-Instruct-GGUF"},
  {"_id": "670", "id": "unsloth/Llama-3.2-1B-Instruct-GGUF", "likes": 40, "downloads": 5000},
  {"_id": "671", "likes": 1},
  "not a model"
])";

// A tree: a README, two single files (one in a folder), a split model in three parts, a
// non-LFS small GGUF, a folder entry.
const char* const kTreeAnswer = R"([
  {"type": "file", "oid": "a1", "size": 1519, "path": "README.md"},
  {"type": "directory", "oid": "d1", "size": 0, "path": "big"},
  {"type": "file", "oid": "b2", "size": 134, "path": "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
   "lfs": {"oid": "3c8f", "size": 807694464, "pointerSize": 134}},
  {"type": "file", "oid": "b3", "size": 135, "path": "Llama-3.2-1B-Instruct-IQ4_XS.gguf",
   "lfs": {"oid": "4d9a", "size": 743205888, "pointerSize": 135}},
  {"type": "file", "oid": "c1", "size": 130, "path": "big/Llama-3.2-1B-Instruct-f16-00002-of-00003.gguf",
   "lfs": {"oid": "e2", "size": 1000000000, "pointerSize": 130}},
  {"type": "file", "oid": "c0", "size": 130, "path": "big/Llama-3.2-1B-Instruct-f16-00001-of-00003.gguf",
   "lfs": {"oid": "e1", "size": 1000000000, "pointerSize": 130}},
  {"type": "file", "oid": "c2", "size": 130, "path": "big/Llama-3.2-1B-Instruct-f16-00003-of-00003.gguf",
   "lfs": {"oid": "e3", "size": 471000000, "pointerSize": 130}},
  {"type": "file", "oid": "f0", "size": 2048, "path": "tiny.gguf"}
])";

}  // namespace

class TestHubSearch : public QObject {
  Q_OBJECT
 private slots:
  void init() { qunsetenv("HF_TOKEN"); }

  void theSearchAnswerGivesEachModelsIdAndCounts() {
    const std::vector<HubRepo> repos = parse_hub_search(kSearchAnswer);
    QCOMPARE(repos.size(), size_t{2});  // the entries without an id are skipped
    QCOMPARE(repos[0].id, std::string("bartowski/Llama-3.2-1B-Instruct-GGUF"));
    QCOMPARE(repos[0].downloads, uint64_t{98765});
    QCOMPARE(repos[0].likes, uint64_t{120});
    QCOMPARE(repos[1].id, std::string("unsloth/Llama-3.2-1B-Instruct-GGUF"));
    for (const char* bad : {"", "{}", "{\"error\": \"x\"}", "[1, 2", "null"}) {
      QVERIFY_THROWS_EXCEPTION(Error, parse_hub_search(bad));
    }
    QVERIFY(parse_hub_search("[]").empty());
  }

  void theTreeGivesTheGgufFilesWithSizesAndSplitModelsAsOne() {
    const std::vector<HubGgufFile> files = parse_hub_tree(kTreeAnswer);
    QCOMPARE(files.size(), size_t{4});
    // By path: the two single files, the split model (its parts' sizes summed), the small one.
    QCOMPARE(files[0].path, std::string("Llama-3.2-1B-Instruct-IQ4_XS.gguf"));
    QCOMPARE(files[0].size, uint64_t{743205888});  // the LFS object's, not the pointer's
    QCOMPARE(files[0].quantization, std::string("IQ4_XS"));
    QCOMPARE(files[1].path, std::string("Llama-3.2-1B-Instruct-Q4_K_M.gguf"));
    QCOMPARE(files[1].quantization, std::string("Q4_K_M"));
    QCOMPARE(files[1].split_parts, 0);
    QCOMPARE(files[2].path, std::string("big/Llama-3.2-1B-Instruct-f16-00001-of-00003.gguf"));
    QCOMPARE(files[2].size, uint64_t{2471000000});
    QCOMPARE(files[2].split_parts, 3);
    QCOMPARE(files[2].quantization, std::string("F16"));
    QCOMPARE(files[3].path, std::string("tiny.gguf"));
    QCOMPARE(files[3].size, uint64_t{2048});
    QCOMPARE(files[3].quantization, std::string());
    QVERIFY_THROWS_EXCEPTION(Error, parse_hub_tree("{\"error\": \"Repository not found\"}"));
  }

  void aFilesNameSaysItsQuantization() {
    const std::pair<const char*, const char*> cases[] = {
        {"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"},   {"smollm2-135m-instruct-q4_1.gguf", "Q4_1"},
        {"gemma-3-270m-it-qat-Q4_0.gguf", "Q4_0"},         {"Qwen3-30B-A3B-UD-IQ4_XS.gguf", "IQ4_XS"},
        {"model.Q8_0.gguf", "Q8_0"},                       {"Mistral-7B-v0.3-BF16.gguf", "BF16"},
        {"phi-4-mini-f16.gguf", "F16"},                    {"gpt-oss-20b-MXFP4.gguf", "MXFP4"},
        {"Qwen2.5-0.5B-Instruct-Q3_K_L.gguf", "Q3_K_L"},   {"no-quantization-here.gguf", ""},
        {"XQ4_K_M.gguf", ""},  // not a word of its own
    };
    for (const auto& [file, quant] : cases) QCOMPARE(quantization_in_name(file), std::string(quant));
  }

  void whatRunsHereIsTheEnginesTypeTable() {
    for (const char* runs : {"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "F16", "BF16", "F32",
                             "q4_k_m", "", "Q2_K", "Q3_K_M", "Q3_K_L", "IQ4_XS", "IQ4_NL", "MXFP4"})
      QVERIFY2(quantization_runs_here(runs), runs);
    for (const char* not_yet : {"IQ2_XXS", "IQ3_M", "IQ1_S", "TQ1_0"}) QVERIFY2(!quantization_runs_here(not_yet), not_yet);
  }

  void theFitIsTheWeightsATenthAndAPoolAgainstWhatIsFree() {
    using V = FitCheck::Verdict;
    const uint64_t gb = 1'000'000'000ull;
    const HubGgufFile q4{"m-Q4_K_M.gguf", 1 * gb, "Q4_K_M", 0};
    const uint64_t needed = gb + gb / 10 + (256ull << 20);
    QCOMPARE(check_fit(q4, 20 * gb).verdict, V::fits);
    QCOMPARE(check_fit(q4, 20 * gb).sentence, std::string("fits: needs about 1.37 GB of the 20.00 GB free"));
    QCOMPARE(check_fit(q4, needed / 8 * 10 + 10).verdict, V::fits);
    QCOMPARE(check_fit(q4, needed).verdict, V::tight);
    QCOMPARE(check_fit(q4, needed - 1).verdict, V::too_big);
    QCOMPARE(check_fit(q4, needed - 1).sentence.substr(0, 10), std::string("too big: n"));
    QCOMPARE(check_fit(q4, 0).sentence, std::string("needs about 1.37 GB of memory"));
    QCOMPARE(check_fit({"m-IQ2_XXS.gguf", gb, "IQ2_XXS", 0}, 20 * gb).verdict, V::does_not_run);
    QCOMPARE(check_fit({"m-IQ2_XXS.gguf", gb, "IQ2_XXS", 0}, 20 * gb).sentence, std::string("IQ2_XXS weights do not run here yet"));
    QCOMPARE(check_fit({"a-00001-of-00002.gguf", gb, "Q8_0", 2}, 20 * gb).verdict, V::does_not_run);
    QVERIFY(available_memory() > 0);  // Linux says it
  }

  void bothRequestsGoToTheHubWithTheWordsEscaped() {
    test::FakeHub hub;
    hub.addRawFile("/api/models", kSearchAnswer);
    hub.addRawFile("/api/models/bartowski/Llama-3.2-1B-Instruct-GGUF/tree/main", kTreeAnswer);
    qputenv("HF_TOKEN", "hf_secret");
    const std::string endpoint = hub.endpoint().toStdString();
    const std::vector<HubRepo> repos = search_hub("llama 3.2 & more", 20, endpoint);
    QCOMPARE(repos.size(), size_t{2});
    const std::vector<HubGgufFile> files = list_hub_gguf_files(repos[0].id, endpoint);
    QCOMPARE(files.size(), size_t{4});
    QCOMPARE(hub.requests(), (QStringList{
                                 "GET /api/models?search=llama%203.2%20%26%20more&filter=gguf&sort=downloads&direction=-1&limit=20",
                                 "GET /api/models/bartowski/Llama-3.2-1B-Instruct-GGUF/tree/main?recursive=true"}));
    QCOMPARE(hub.authorizations(), (QStringList{"Bearer hf_secret", "Bearer hf_secret"}));
    // Refusals in words; a name that could leave the API's path is refused before any request.
    hub.setStatus("/api/models/owner/gone/tree/main", 404);
    try {
      list_hub_gguf_files("owner/gone", endpoint);
      QFAIL("a missing repository was listed");
    } catch (const Error& e) {
      QCOMPARE(std::string(e.what()), std::string("the hub has no such repository (HTTP 404)"));
    }
    QVERIFY_THROWS_EXCEPTION(Error, list_hub_gguf_files("../../x", endpoint));
    QCOMPARE(hub.requests().size(), 3);
  }
};

QTEST_GUILESS_MAIN(TestHubSearch)
#include "test_hub_search.moc"
