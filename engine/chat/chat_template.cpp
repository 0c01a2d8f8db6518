// Recognising a model's chat template by its markers, and writing a chat in it.
#include "engine/chat/chat_template.h"

#include "engine/gguf/gguf_file.h"

namespace pagedchat {
namespace {

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

}  // namespace

ChatTemplate ChatTemplate::from_gguf(const GgufFile& file) {
  std::string t = file.opt_string("tokenizer.chat_template").value_or("");
  // A base model's file may carry no template: its family's own format, then.
  const std::string arch = file.opt_string("general.architecture").value_or("");
  if (t.empty() && arch.starts_with("gemma")) return ChatTemplate(Style::kGemma, {});
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
  }
  return "?";
}

// Markup is what the template writes, the role names included (the roles are ours: system, user,
// assistant); a message's content is always text.
PromptText ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
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
