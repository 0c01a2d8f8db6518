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
  if (t.find("<|start_header_id|>") != std::string::npos) return ChatTemplate(Style::kLlama3, {});
  if (t.find("<start_of_turn>") != std::string::npos) return ChatTemplate(Style::kGemma, {});
  if (t.find("[INST]") != std::string::npos) return ChatTemplate(Style::kLlama2, {});
  return ChatTemplate(Style::kChatML, chatml_default_system(t));
}

const char* ChatTemplate::style_name() const {
  switch (style_) {
    case Style::kChatML: return "chatml";
    case Style::kLlama3: return "llama3";
    case Style::kGemma: return "gemma";
    case Style::kLlama2: return "llama2";
  }
  return "?";
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  switch (style_) {
    case Style::kChatML: {
      if (default_system_ && (messages.empty() || messages.front().role != "system"))
        out += "<|im_start|>system\n" + *default_system_ + "<|im_end|>\n";
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    }
    case Style::kLlama3: {
      out += "<|begin_of_text|>";
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    }
    case Style::kGemma: {
      // Gemma has no system role: the system text opens the first user turn.
      std::string pending_system;
      out += "<bos>";
      for (const auto& m : messages) {
        if (m.role == "system") {
          pending_system += m.content + "\n\n";
          continue;
        }
        std::string role = m.role == "assistant" ? "model" : "user";
        out += "<start_of_turn>" + role + "\n" + pending_system + m.content + "<end_of_turn>\n";
        pending_system.clear();
      }
      if (add_generation_prompt) out += "<start_of_turn>model\n";
      break;
    }
    case Style::kLlama2: {
      std::string system;
      bool first_user = true;
      for (const auto& m : messages) {
        if (m.role == "system") {
          system = m.content;
        } else if (m.role == "user") {
          out += "<s>[INST] ";
          if (first_user && !system.empty()) out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
          out += m.content + " [/INST]";
          first_user = false;
        } else {
          out += " " + m.content + "</s>";
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace pagedchat
