// A model's chat template: its own rendered by our Jinja, or a built-in format recognised by
// its markers (see chat_template.h).
#include "engine/chat/chat_template.h"

#include <nlohmann/json.hpp>

#include <set>

#include "engine/chat/jinja/jinja_template.h"
#include "engine/chat/reasoning.h"
#include "engine/gguf/gguf_file.h"

namespace pagedchat {
namespace {

// The functions of an OpenAI tools array without a description given an empty one; whether any
// lacked it.
bool fill_descriptions(nlohmann::ordered_json& tools) {
  bool filled = false;
  for (auto& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    auto& f = tool["function"];
    if (f.contains("description") && f["description"].is_string()) continue;
    f["description"] = "";
    filled = true;
  }
  return filled;
}

// SmolLM2's template writes a fixed system turn when the first message is not a system
// message: '<|im_start|>system\n...<|im_end|>\n' inside a Jinja string literal.
std::optional<std::string> chatml_default_system(const std::string& tmpl) {
  const std::string open = "'<|im_start|>system\n";
  size_t a = tmpl.find(open);
  if (a == std::string::npos) return std::nullopt;
  a += open.size();
  size_t b = tmpl.find("<|im_end|>", a);
  if (b == std::string::npos) return std::nullopt;
  std::string s = tmpl.substr(a, b - a);
  if (s.find("{{") != std::string::npos || s.find('\'') != std::string::npos) return std::nullopt;
  return s;
}

// The text of a special token named by its id in the file's metadata ("" when there is none).
std::string token_text(const GgufFile& file, const std::vector<std::string_view>& tokens, const char* id_key) {
  const std::optional<uint64_t> id = file.opt_uint(id_key);
  return id && *id < tokens.size() ? std::string(tokens[*id]) : std::string();
}

}  // namespace

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file) {
  const std::string t = file.opt_string("tokenizer.chat_template").value_or("");
  const std::vector<std::string_view> tokens = file.get_string_array("tokenizer.ggml.tokens");
  std::string bos = token_text(file, tokens, "tokenizer.ggml.bos_token_id");
  std::string eos = token_text(file, tokens, "tokenizer.ggml.eos_token_id");
  // A base model's file may carry no template: its family's own format, then.
  const std::string arch = file.opt_string("general.architecture").value_or("");
  ChatTemplate builtin = t.empty() && arch.starts_with("gemma") ? ChatTemplate(Style::kGemma, {}) : recognise(t);
  builtin.bos_token_ = bos;
  builtin.eos_token_ = eos;
  if (t.empty()) return builtin;
  try {
    return from_jinja(t, std::move(bos), std::move(eos));
  } catch (const Error& e) {
    builtin.fallback_reason_ = format("its chat template cannot be rendered here (%s)", e.what());
    return builtin;
  }
}

ChatTemplate ChatTemplate::from_jinja(const std::string& source, std::string bos_token, std::string eos_token) {
  ChatTemplate t = recognise(source);
  t.jinja_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source));
  t.tool_format_ = tool_format_of(source);
  t.thinks_ = template_thinks(source);
  t.harmony_ = template_is_harmony(source);
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  return t;
}

ChatTemplate ChatTemplate::builtin() const {
  ChatTemplate t = *this;
  t.jinja_.reset();
  t.fallback_reason_.clear();
  return t;
}

std::string ChatTemplate::describe() const {
  static const char* kNames[] = {"ChatML", "Llama 3", "Gemma", "Llama 2", "Phi-3"};
  if (jinja_) return "the model's own chat template";
  if (style_ == Style::kPlainText) return "plain text (no chat format: the model continues the text)";
  return std::string("the built-in ") + kNames[static_cast<int>(style_)] + " format";
}

ChatTemplate ChatTemplate::recognise(const std::string& t) {
  if (t.find("<|start_header_id|>") != std::string::npos) return ChatTemplate(Style::kLlama3, {});
  if (t.find("<start_of_turn>") != std::string::npos) return ChatTemplate(Style::kGemma, {});
  if (t.find("[INST]") != std::string::npos) return ChatTemplate(Style::kLlama2, {});
  if (t.find("<|assistant|>") != std::string::npos && t.find("<|end|>") != std::string::npos)
    return ChatTemplate(Style::kPhi3, {});
  return ChatTemplate(Style::kChatML, chatml_default_system(t));
}

const char* ChatTemplate::style_name() const {
  switch (style_) {
    case Style::kChatML: return "chatml";
    case Style::kLlama3: return "llama3";
    case Style::kGemma: return "gemma";
    case Style::kLlama2: return "llama2";
    case Style::kPhi3: return "phi3";
    case Style::kPlainText: return "plain";
  }
  return "?";
}

// The context Hugging Face gives a template: messages (their contents are the caller's data, so
// text), add_generation_prompt, and the special tokens' texts (markup). A role is one of the
// names templates know and is markup, as the template's own "<|im_start|>assistant\n" is: a
// held prompt then reads the same as the chat rendered whole. Any other role stays text.
// A JSON value for a template, every string in it text (a client's: never markup).
static jinja::Value jinja_text_value(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return jinja::Value::none();
    case nlohmann::json::value_t::boolean: return jinja::Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return jinja::Value(j.get<int64_t>());
    case nlohmann::json::value_t::number_float: return jinja::Value(j.get<double>());
    case nlohmann::json::value_t::string: return jinja::Value::text(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      jinja::List l;
      for (const auto& x : j) l.push_back(jinja_text_value(x));
      return jinja::Value(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<jinja::Dict>();
      for (const auto& [k, v] : j.items()) d->set(PromptText().text(k), jinja_text_value(v));
      return jinja::Value(d);
    }
    default: return {};
  }
}

ChatTemplate ChatTemplate::with_tools(std::shared_ptr<const ToolSet> tools, const ToolChoice& choice) const {
  ChatTemplate t = *this;
  t.offered_tools_ = std::move(tools);
  t.offered_choice_ = choice;
  return t;
}

PromptText ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const ToolSet* tools) const {
  if (tools || !offered_tools_) return render(messages, add_generation_prompt, tools);
  PromptText text = render(messages, add_generation_prompt, offered_tools_.get());
  if (add_generation_prompt) text.markup(ToolSet::forced_prefix(tool_format(), offered_choice_));
  return text;
}

PromptText ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const ToolSet* tools) const {
  if (tools && tool_format() == ToolFormat::kGeneric) return render(generic_tool_messages(messages, *tools), add_generation_prompt, nullptr);
  if (!jinja_) return apply_builtin(messages, add_generation_prompt);
  static const std::set<std::string> kRoles = {"system", "user", "assistant", "tool"};
  jinja::List list;
  for (const ChatMessage& m : messages) {
    auto d = std::make_shared<jinja::Dict>();
    d->set(PromptText().markup("role"), kRoles.count(m.role) ? jinja::Value::markup(m.role) : jinja::Value::text(m.role));
    // gpt-oss's template takes a reply's thinking as `thinking` and refuses a call's reply with
    // both it and content: then the content (a preamble) goes, as llama.cpp's gpt-oss handler does.
    const bool content_gives_way = harmony_ && !m.reasoning.empty() && !m.tool_calls.empty();
    d->set(PromptText().markup("content"), jinja::Value::text(content_gives_way ? std::string() : m.content));
    if (!m.reasoning.empty()) d->set(PromptText().markup("thinking"), jinja::Value::text(m.reasoning));
    if (!m.tool_calls.empty()) {
      // As Hugging Face passes them: {"id", "type": "function", "function": {"name", "arguments"}},
      // the arguments an object (templates write them with tojson).
      jinja::List calls;
      for (const ToolCall& c : m.tool_calls) {
        const nlohmann::ordered_json args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
        const nlohmann::ordered_json call = {{"id", c.id}, {"type", "function"},
                                             {"function", {{"name", c.name}, {"arguments", args.is_discarded() ? nlohmann::ordered_json(c.arguments) : args}}}};
        calls.push_back(jinja_text_value(call));
      }
      d->set(PromptText().markup("tool_calls"), jinja::Value(std::move(calls)));
    }
    if (m.role == "tool") d->set(PromptText().markup("tool_call_id"), jinja::Value::text(m.tool_call_id));
    if (!m.name.empty()) d->set(PromptText().markup("name"), jinja::Value::text(m.name));
    list.push_back(jinja::Value(d));
  }
  jinja::Dict context;
  context.set(PromptText().markup("messages"), jinja::Value(std::move(list)));
  nlohmann::ordered_json tools_json;
  if (tools) {
    tools_json = nlohmann::ordered_json::parse(tools->json());
    context.set(PromptText().markup("tools"), jinja_text_value(tools_json));
  }
  context.set(PromptText().markup("add_generation_prompt"), jinja::Value(add_generation_prompt));
  context.set(PromptText().markup("bos_token"), jinja::Value::markup(bos_token_));
  context.set(PromptText().markup("eos_token"), jinja::Value::markup(eos_token_));
  try {
    try {
      return jinja_->render(context);
    } catch (const jinja::TemplateRaised&) {
      throw;
    } catch (const jinja::RenderBudgetExceeded&) {
      throw;
    } catch (const Error&) {
      // A function's description is optional in OpenAI's API, but some templates write it
      // unguarded (gpt-oss: "// " + tool.description, which fails in Hugging Face's jinja2 too):
      // those get an empty one. Only on failure, so a template that renders the tools as given
      // still prints them exactly as the client sent them.
      if (!tools || !fill_descriptions(tools_json)) throw;
      context.set(PromptText().markup("tools"), jinja_text_value(tools_json));
      return jinja_->render(context);
    }
  } catch (const jinja::TemplateRaised& e) {
    throw ChatTemplateError(format("the model's chat template refuses this conversation: %s", e.what()));
  } catch (const jinja::RenderBudgetExceeded& e) {
    throw ChatTemplateTooCostly(format("the model's chat template does not finish: %s", e.what()));
  } catch (const Error& e) {
    throw ChatTemplateError(format("the model's chat template failed on this conversation: %s", e.what()));
  }
}

void ChatTemplate::open_reply(PromptText& prompt, std::string_view reply) const {
  if (!harmony()) {
    prompt.text(reply);
    return;
  }
  ReasoningSplitter split(false);
  ReasoningDelta d = split.push(reply);
  const ReasoningDelta rest = split.finish();
  d.reasoning += rest.reasoning;
  d.content += rest.content;
  const bool thinks = reply.starts_with(kThinkOpen);
  if (thinks) {
    // The newlines the app's form puts inside the tags are its own, not the model's.
    std::string_view r = d.reasoning;
    if (r.starts_with('\n')) r.remove_prefix(1);
    if (r.ends_with('\n') && reply.find(kThinkClose) != std::string_view::npos) r.remove_suffix(1);
    prompt.markup("<|channel|>analysis<|message|>").text(r);
    if (reply.find(kThinkClose) == std::string_view::npos) return;  // cut while thinking
    prompt.markup("<|end|><|start|>assistant");
  }
  prompt.markup("<|channel|>final<|message|>").text(d.content);
}

// Markup is what the template writes, the role names included (the roles are ours: system, user,
// assistant); a message's content is always text.
PromptText ChatTemplate::apply_builtin(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  PromptText out;
  switch (style_) {
    case Style::kChatML: {
      if (default_system_ && (messages.empty() || messages.front().role != "system"))
        out.markup("<|im_start|>system\n").text(*default_system_).markup("<|im_end|>\n");
      for (const auto& m : messages) out.markup("<|im_start|>" + m.role + "\n").text(m.content).markup("<|im_end|>\n");
      if (add_generation_prompt) out.markup("<|im_start|>assistant\n");
      break;
    }
    case Style::kLlama3: {
      out.markup("<|begin_of_text|>");
      for (const auto& m : messages)
        out.markup("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n").text(m.content).markup("<|eot_id|>");
      if (add_generation_prompt) out.markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    }
    case Style::kGemma: {
      // Gemma has no system role: the system text opens the first user turn.
      std::string pending_system;
      out.markup("<bos>");
      for (const auto& m : messages) {
        if (m.role == "system") {
          pending_system += m.content + "\n\n";
          continue;
        }
        out.markup(m.role == "assistant" ? "<start_of_turn>model\n" : "<start_of_turn>user\n");
        out.text(pending_system).text(m.content).markup("<end_of_turn>\n");
        pending_system.clear();
      }
      if (add_generation_prompt) out.markup("<start_of_turn>model\n");
      break;
    }
    case Style::kPhi3: {
      for (const auto& m : messages) out.markup("<|" + m.role + "|>\n").text(m.content).markup("<|end|>\n");
      if (add_generation_prompt) out.markup("<|assistant|>\n");
      break;
    }
    case Style::kPlainText: {
      for (const auto& m : messages)
        if (m.role != "system") out.text(m.content);
      break;
    }
    case Style::kLlama2: {
      std::string system;
      bool first_user = true;
      for (const auto& m : messages) {
        if (m.role == "system") {
          system = m.content;
        } else if (m.role == "user") {
          out.markup("<s>[INST] ");
          if (first_user && !system.empty()) out.markup("<<SYS>>\n").text(system).markup("\n<</SYS>>\n\n");
          out.text(m.content).markup(" [/INST]");
          first_user = false;
        } else {
          out.markup(" ").text(m.content).markup("</s>");
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace pagedchat
