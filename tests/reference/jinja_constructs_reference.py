"""Reference renderings of small Jinja snippets, one behaviour each, for the C++ Jinja interpreter's tests.

Each snippet in CASES is rendered by jinja2 in the environment Hugging Face transformers uses for
chat templates (the one tests/reference/chat_template_reference.py builds: ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and loopcontrols; tojson as json.dumps(ensure_ascii=False, ...);
raise_exception; strftime_now on the fixed clock 2024-07-26 12:00:00), all with one shared CONTEXT,
and the results are stored in tests/data/chat_templates/constructs.json:

    {"generator": "...", "context": {...}, "cases": [
        {"name": ..., "template": ..., "output": ...} or
        {"name": ..., "template": ..., "error": str(exc), "error_type": type(exc).__name__}]}

Every dict in CONTEXT has its keys in sorted order, so a reader that orders object keys (QJsonObject)
iterates them in the order jinja2 saw them. Comments next to a snippet flag where jinja2 (or the
Python under it) does something a re-implementation may not expect.

Run with the tests' venv (installer/install-deps.sh puts jinja2 there; ctest runs --check):

    ~/.cache/pagedchat/venv/bin/python tests/reference/jinja_constructs_reference.py --write
    ~/.cache/pagedchat/venv/bin/python tests/reference/jinja_constructs_reference.py --check
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jinja2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from chat_template_reference import load_stored, make_env, sorted_keys  # noqa: E402 -- the same environment

DATA = HERE.parent / "data" / "chat_templates"
OUTPUT = DATA / "constructs.json"


# ------------------------------------------------------------------ the shared context

CONTEXT = sorted_keys({
    "s": "  Hello, World!  ",
    "words": ["b", "a", "C", "a"],
    "nums": [3, 1, 2],
    "floats": [1.5, 2.25],
    "n": 7,
    "neg": -7,
    "f": 2.5,
    "t": True,
    "nothing": None,
    "empty": "",
    "msgs": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        ]},
        {"role": "tool", "content": "18C"},
    ],
    "d": {"a": 1, "b": [1, 2], "c": {"x": "y"}},
    "d_items": {"a": 1, "items": "shadow"},
    "uni": "héllo 日本 ✓",
    "multiline": "line1\nline2\n\nline4",
})


# ------------------------------------------------------------------ the snippets

CASES = [
    # ---------------------------------------------------------------- whitespace
    ("ws_trim_blocks_newline_after_tag", "{% if t %}\nyes\n{% endif %}\nafter"),
    ("ws_lstrip_blocks_indented_tags", "a\n    {% if t %}\n    b\n    {% endif %}\nc"),
    # lstrip_blocks only strips whitespace between a line start and a tag; mid-line spaces stay.
    ("ws_lstrip_mid_line_not_stripped", "a  {% if t %}b{% endif %}  c"),
    # trim_blocks removes the newline after a block tag even when the tag is mid-line.
    ("ws_trim_after_mid_line_tag", "a {% if t %}\nb{% endif %}\nc"),
    ("ws_comment_at_line_start", "a\n  {# note #}\nb"),
    ("ws_comment_mid_line", "a {# c #} b\nc"),
    ("ws_comment_then_text_same_line", "  {# c #} x\ny"),
    # trim_blocks / lstrip_blocks do not apply to {{ }}.
    ("ws_no_trim_after_variable", "{{ n }}\nx"),
    ("ws_no_lstrip_before_variable", "  {{ n }}\n"),
    ("ws_minus_left_variable", "a   \n  {{- n }}"),
    ("ws_minus_right_variable", "{{ n -}}   \n  b"),
    ("ws_minus_both_variable", "a \n {{- n -}} \n b"),
    ("ws_minus_both_block", "a\n  {%- if t -%}\n  b  \n{%- endif -%}\n  c"),
    ("ws_minus_left_block_only", "a  \n\n  {%- if t %}\nb{% endif %}"),
    ("ws_minus_right_block_keeps_nothing", "{% if t -%}\n\n   b{% endif %}"),
    ("ws_minus_comment", "a  {#- c -#}  b"),
    ("ws_minus_comment_multiline", "a\n\n{#- c -#}\n\nb"),
    # '+' on the left turns lstrip_blocks off for that tag.
    ("ws_plus_left_disables_lstrip", "a\n  {%+ if t %}b{% endif %}"),
    # '+' on the right turns trim_blocks off for that tag.
    ("ws_plus_right_disables_trim", "{% if t +%}\nb{% endif %}"),
    ("ws_first_line_indented_block", "   {% if t %}\nx\n   {% endif %}\ny"),
    ("ws_set_lines_vanish", "{% set a = 1 %}\n{% set b = 2 %}\n{{ a + b }}"),
    ("ws_for_loop_lines", "{% for w in words %}\n  {{ w }}\n{% endfor %}\nend"),
    # keep_trailing_newline is False: one trailing newline of the template source is dropped.
    ("ws_template_trailing_newline_removed", "{{ n }}\n"),
    ("ws_template_two_trailing_newlines", "x\n\n"),
    ("ws_raw_block", "{% raw %}{{ n }} {% if %}{# c #}{% endraw %}"),
    # The newline right after {% raw %} is kept (raw text is verbatim), but lstrip_blocks strips the
    # indentation before {% endraw %} and trim_blocks drops the newline after it.
    ("ws_raw_block_lines", "{% raw %}\n  {{ x }}\n  {% endraw %}\nz"),
    ("ws_lone_braces", "a { b } {n} }} { ok"),
    ("ws_tag_delimiters_in_string", "{{ '}}' }}{{ '{% x %}' }}{{ \"{{\" }}"),
    ("ws_lstrip_tab", "\t{% if t %}x{% endif %}"),
    ("ws_multiline_tag", "{% if\n   t\n %}y{% endif %}"),
    # trim_blocks removes only the single newline directly after the tag, not following spaces.
    ("ws_trim_only_newline_not_spaces", "{% if t %}  \nx{% endif %}"),

    # ---------------------------------------------------------------- literals
    ("lit_string_escapes", r"""{{ 'a\nb' }}|{{ "c\td" }}|{{ 'e\\f' }}|{{ 'g\'h' }}|{{ "i\"j" }}"""),
    ("lit_unicode_and_hex_escapes", r"{{ '\u00e9' }}{{ '\x41' }}{{ '\U0001F600' }}"),
    # Unknown escapes are kept as they are (backslash included), like Python.
    ("lit_unknown_escape_kept", r"{{ 'a\qb' }}"),
    ("lit_adjacent_strings", "{{ 'a' 'b' \"c\" }}"),
    ("lit_ints", "{{ 42 }} {{ -3 }} {{ 1_000 }} {{ 0 }}"),
    # Hex, octal and binary integer literals exist; a leading-zero decimal like 007 is a syntax error.
    ("lit_int_prefixes", "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }}"),
    ("lit_floats", "{{ 1.0 }} {{ 1e3 }} {{ 1.5e-3 }} {{ 2.50 }}"),
    ("lit_float_sum", "{{ 0.1 + 0.2 }}"),
    # / is always true division: 4/2 is 2.0, not 2.
    ("lit_true_division", "{{ 1/3 }} {{ 10/4 }} {{ 4/2 }} {{ 7 / 2 }}"),
    ("lit_power", "{{ 2**10 }} {{ 2 ** 0.5 }} {{ 2 ** -1 }}"),
    # // floors toward negative infinity (-7//2 is -4); a float operand gives a float.
    ("lit_floor_division", "{{ 7//2 }} {{ -7//2 }} {{ 2.5//1 }} {{ 7.5 // 2 }} {{ 10 // 3.0 }}"),
    # % takes the sign of the divisor, Python style (-7%2 is 1, 7%-2 is -1).
    ("lit_modulo", "{{ -7 % 2 }} {{ 7 % -2 }} {{ 7 % 3 }} {{ 5.5 % 2 }}"),
    # Python ints are unbounded.
    ("lit_big_int", "{{ 2 ** 64 }}"),
    ("lit_bool_none", "{{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }}"),
    ("lit_list_nested", "{{ [1, 2, [3, 'x'], []] }}"),
    ("lit_list_trailing_comma", "{{ [1, 2,] }}"),
    ("lit_tuples", "{{ (1, 2) }} {{ (1,) }} {{ () }} {{ (1) }}"),
    ("lit_dict_nested", "{{ {'a': 1, 'b': {'c': [1]}} }}"),
    # Dict literals keep insertion order (not sorted).
    ("lit_dict_insertion_order", "{{ {'b': 1, 'a': 2} }} {% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}"),
    ("lit_dict_duplicate_key", "{{ {'a': 1, 'a': 2} }}"),

    # ---------------------------------------------------------------- printing
    # none prints as "None", but undefined prints as "".
    ("print_none", "[{{ none }}][{{ nothing }}]"),
    ("print_booleans", "{{ true }} {{ t }} {{ false }}"),
    ("print_float_whole", "{{ 1.0 }} {{ f }} {{ 3 * 1.0 }}"),
    # Floats print with Python repr: 1e+20, 1e+16, but 1000000000000000.0 below 1e16.
    ("print_float_large", "{{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 123456789.0 }}"),
    # Python repr switches to exponent form below 1e-4: 1e-07, 1e-05, but 0.0001.
    ("print_float_small", "{{ 1e-7 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }}"),
    ("print_list_mixed", "{{ [1, 'a', none, true] }}"),
    ("print_dict", "{{ {'a': 1, 'b': 'x'} }}"),
    # Python repr picks double quotes for a string holding a single quote.
    ("print_list_repr_quotes", "{{ [\"it's\", 'a\"b', \"a'b\" ~ '\"c'] }}"),
    ("print_undefined", "[{{ undefined_name }}]"),
    # An undefined value inside a list prints as "Undefined".
    ("print_undefined_in_list", "{{ [undefined_name] }}"),
    ("print_tuple", "{{ (1, 2) }}"),
    # Inside a list the string is repr'd: the newline shows as the two characters \n.
    ("print_list_string_with_newline", "{{ ['a\nb', '\t'] }}"),
    ("print_list_unicode", "{{ [uni] }}"),
    ("print_context_dict", "{{ d }}"),
    ("print_context_message", "{{ msgs[0] }}"),
    ("print_float_list", "{{ floats }} {{ [1.0, 2] }}"),
    # range() is a Python range object: it prints as range(0, 3).
    ("print_range", "{{ range(3) }} {{ range(3)|list }}"),
    ("print_namespace", "{{ namespace(a=1) }}"),
    # dict methods return views that print with their Python type name.
    ("print_dict_views", "{{ d.keys() }} {{ d_items.items() }}"),

    # ---------------------------------------------------------------- operators
    ("op_add_strings", "{{ 'a' + 'b' }}"),
    ("op_add_lists", "{{ [1] + [2, 3] }}"),
    ("op_add_numbers", "{{ 1 + 2.0 }} {{ n + f }} {{ true + 1 }}"),
    ("op_tilde_numbers", "{{ 1 ~ 2 }} {{ 1.0 ~ 'x' }} {{ f ~ n }}"),
    ("op_tilde_none", "{{ 'a' ~ none ~ 'b' }}"),
    ("op_tilde_undefined", "{{ 'a' ~ undefined_name ~ 'b' }}"),
    ("op_tilde_list_and_bool", "{{ 'x' ~ [1, 'a'] }} {{ true ~ '' }}"),
    ("op_multiply", "{{ 3 * 4 }} {{ 2 * 1.5 }}"),
    ("op_string_times_int", "{{ 'ab' * 3 }} {{ 3 * 'ab' }} [{{ 'ab' * 0 }}] [{{ 'ab' * -1 }}]"),
    ("op_list_times_int", "{{ [1, 'a'] * 2 }}"),
    ("op_compare_int_float", "{{ 1 == 1.0 }} {{ 2 > 1.5 }} {{ 1 != 1.0 }} {{ 2 >= 2.0 }}"),
    # Comparisons chain Python style: 1 < 3 < 2 is (1 < 3) and (3 < 2).
    ("op_compare_chained", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 3 > 2 > 1 }} {{ 1 == 1 == 1 }}"),
    ("op_eq_lists", "{{ [1, 2] == [1, 2] }} {{ [1, 2] == [2, 1] }} {{ [1] == [1.0] }} {{ (1, 2) == [1, 2] }}"),
    ("op_eq_dicts", "{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}"),
    ("op_eq_mixed_types", "{{ '1' == 1 }} {{ true == 1 }} {{ false == 0 }} {{ none == false }}"),
    ("op_eq_none_and_undefined", "{{ nothing == none }} {{ undefined_name == none }}"),
    ("op_string_compare", "{{ 'a' < 'b' }} {{ 'B' < 'a' }} {{ 'ab' < 'b' }} {{ 'a' < 'ab' }}"),
    ("op_list_compare", "{{ [1, 2] < [1, 3] }} {{ [1] < [1, 0] }}"),
    ("op_in_string", "{{ 'ell' in 'hello' }} {{ '' in 'x' }} {{ 'L' in 'hello' }}"),
    ("op_in_list", "{{ 'a' in words }} {{ 'z' in words }} {{ 1.0 in nums }}"),
    ("op_in_dict", "{{ 'a' in d }} {{ 1 in d }} {{ 'x' in d.c }} {{ 'y' in d.c }}"),
    ("op_not_in", "{{ 'z' not in words }} {{ not 'a' in words }}"),
    # 'x' in undefined is False (undefined iterates as empty).
    ("op_in_undefined", "{{ 'a' in undefined_name }}"),
    # and/or return one of their operands, not a boolean.
    ("op_or_returns_operand", "{{ 0 or 'x' }} {{ 'a' or 'b' }} {{ '' or 0 }} {{ none or [] }}"),
    ("op_and_returns_operand", "{{ 'a' and 'b' }} {{ 0 and 'b' }} [{{ '' and 'b' }}] {{ [] and 1 }}"),
    ("op_and_or_undefined", "[{{ undefined_name or 'dflt' }}] [{{ undefined_name and 'x' }}]"),
    ("op_not", "{{ not 0 }} {{ not [] }} {{ not 'a' }} {{ not nothing }} {{ not undefined_name }}"),
    ("op_truthiness", "{% for v in [0, 0.0, '', [], {}, none, 'a', [0], 1, ' ', -1] %}{{ 'T' if v else 'F' }}{% endfor %}"),
    ("op_chained_conditions", "{{ t and n > 5 and not nothing }} {{ nothing or empty or n }}"),
    # ~ binds tighter than + and - (but looser than * and /): 'a' ~ 2 * 3 is "a6".
    ("op_precedence_tilde_times", "{{ 'a' ~ 2 * 3 }} {{ 'n=' ~ (1 + 2) }} {{ 'a' ~ 6 / 2 }}"),
    # not binds looser than ==: not 1 == 2 is not (1 == 2).
    ("op_precedence_not_eq", "{{ not 1 == 2 }} {{ not n == 7 }}"),
    # Unlike Python, unary minus binds tighter than **: -2 ** 2 is (-2) ** 2 = 4.
    ("op_precedence_neg_pow", "{{ -2 ** 2 }}"),
    # Unlike Python, ** is left-associative: 2 ** 3 ** 2 is (2 ** 3) ** 2 = 64.
    ("op_pow_left_assoc", "{{ 2 ** 3 ** 2 }}"),
    ("op_precedence_arith", "{{ 1 + 2 * 3 - 4 / 2 }} {{ (1 + 2) * 3 }} {{ 10 - 2 - 3 }}"),
    ("op_unary", "{{ -n }} {{ - f }} {{ -(1 + 2) }} {{ +n }} {{ --n }}"),
    # A filter applies to the negated number: -1|abs is (-1)|abs = 1.
    ("op_neg_filter_precedence", "{{ -1|abs }} {{ -n|string ~ '!' }}"),
    ("op_filter_binds_tighter_than_tilde", "{{ 'a' ~ 'b'|upper }} {{ ('a' ~ 'b')|upper }}"),
    # A test binds tighter than +: 1 + 1 is even is 1 + (1 is even) = 1 + False = 1.
    ("op_test_precedence", "{{ 1 + 1 is even }} {{ (1 + 1) is even }} {{ not 2 is even }}"),
    ("op_in_precedence", "{{ 'a' ~ 'b' in 'xab' }}"),
    ("op_ternary", "{{ 'yes' if t else 'no' }} {{ 'yes' if nothing else 'no' }}"),
    # Without else a false condition gives undefined, which prints as "".
    ("op_ternary_no_else", "[{{ 'yes' if nothing }}] {{ 'a' ~ ('b' if false) ~ 'c' }}"),
    ("op_ternary_nested", "{{ 'a' if n < 5 else 'b' if n < 10 else 'c' }}"),
    ("op_percent_format", "{{ '%s-%d' % ('a', 3) }} {{ '%s' % 'x' }} {{ '%05.2f' % f }} {{ '%s' % [1, 2] }}"),
    # Python writes a negative in another base as its magnitude with a sign, and '#' as 0x / 0o.
    ("op_percent_format_int_bases", "{{ '%x|%X|%#x|%#X|%o|%#o|%+d|% d' % (255, 255, 255, 255, 8, 8, 5, 5) }} {{ '%x|%#o|%d|%#x' % (-31, 0, -7, -255) }}"),

    # ---------------------------------------------------------------- subscripts and attributes
    ("sub_attr_and_item", "{{ d.a }} {{ d['a'] }} {{ d.c.x }} {{ d['c']['x'] }} {{ d['c'].x }}"),
    ("sub_missing_is_defined", "{{ d.missing is defined }} {{ d.a is defined }} [{{ d.missing }}]"),
    ("sub_messages", "{{ msgs[0].content }} {{ msgs[-1]['role'] }} {{ msgs[1]['content'] }}"),
    ("sub_list_slices", "{{ words[1:3] }} {{ words[::-1] }} {{ words[-2:] }} {{ words[:1] }} {{ words[::2] }} {{ nums[2:0:-1] }}"),
    ("sub_string_slices", "[{{ s[2:7] }}] {{ uni[1:4] }} {{ uni[::-1] }} {{ uni|length }} {{ 'abcdef'[::2] }}"),
    ("sub_string_index", "{{ uni[1] }} {{ uni[-1] }} {{ 'abc'[0] }}"),
    # words.0 is words[0]: a digit after the dot is an integer subscript.
    ("sub_dot_integer", "{{ words.0 }} {{ d.b.1 }} {{ msgs.1.role }}"),
    ("sub_index_out_of_range_undefined", "[{{ words[10] }}] {{ words[10] is defined }}"),
    # A string subscript on a list is undefined, not an error.
    ("sub_list_string_key_undefined", "[{{ words['a'] }}]"),
    ("sub_variable_key", "{% set k = 'c' %}{{ d[k].x }} {{ d[k ~ ''] }}"),
    ("sub_nested_tool_call", "{{ msgs[3].tool_calls[0].function.name }} {{ msgs[3]['tool_calls'][0]['function']['arguments'].city }}"),
    # d.items resolves to the dict method, not the 'items' key; d['items'] is the key.
    ("sub_dict_key_named_items", "{{ d_items.items is callable }} {{ d_items['items'] }} {% for k, v in d_items.items() %}{{ k }}={{ v }};{% endfor %}"),
    # Attribute of none is undefined (prints ""), not an error; only one level further is.
    ("sub_attr_of_none_undefined", "[{{ nothing.x }}] {{ nothing.x is defined }}"),
    ("sub_string_missing_attr", "[{{ 'abc'.nope }}]"),
    ("sub_undefined_is_defined", "{{ nope is defined }} {{ nope is not defined }}"),

    # ---------------------------------------------------------------- statements
    ("stmt_if_elif_else", "{% for v in [1, 5, 10] %}{% if v < 3 %}small{% elif v < 7 %}mid{% else %}big{% endif %} {% endfor %}"),
    ("stmt_if_undefined", "{% if undefined_name %}y{% else %}n{% endif %}"),
    ("stmt_if_short_circuit", "{% if nope is defined and nope.x %}y{% else %}n{% endif %}"),
    ("stmt_for_else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}"),
    ("stmt_for_else_all_filtered", "{% for x in nums if x > 10 %}{{ x }}{% else %}none{% endfor %}"),
    ("stmt_for_undefined_is_empty", "{% for x in undefined_name %}x{% else %}empty{% endfor %}"),
    ("stmt_for_dict_keys", "{% for k in d %}{{ k }},{% endfor %}"),
    ("stmt_for_string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}"),
    ("stmt_for_items_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
    ("stmt_for_items_tuple", "{% for item in d.items() %}{{ item }} {% endfor %}"),
    ("stmt_for_list_unpack", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}"),
    ("stmt_for_paren_unpack", "{% for (a, b) in [(1, 2), ('x', 'y')] %}{{ a }}{{ b }} {% endfor %}"),
    # loop.index counts only the items the 'if' lets through.
    ("stmt_for_if_filter", "{% for x in nums if x != 1 %}{{ loop.index }}:{{ x }}/{{ loop.length }} {% endfor %}"),
    # loop.first / loop.last print as True / False.
    ("stmt_loop_vars", "{% for w in words %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}"),
    ("stmt_loop_first_last", "{% for w in words %}{% if loop.first %}<{% endif %}{{ w }}{% if not loop.last %},{% else %}>{% endif %}{% endfor %}"),
    # previtem on the first pass and nextitem on the last are undefined (print "").
    ("stmt_loop_previtem_nextitem", "{% for x in nums %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}"),
    ("stmt_loop_previtem_defined", "{% for x in nums %}{{ loop.previtem is defined }}/{{ loop.nextitem is defined }} {% endfor %}"),
    ("stmt_loop_cycle", "{% for x in nums %}{{ loop.cycle('odd', 'even') }} {% endfor %}"),
    ("stmt_loop_changed", "{% for x in [1, 1, 2, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"),
    ("stmt_nested_loops", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %}"),
    ("stmt_nested_loop_restores_outer_loop", "{% for a in [1, 2] %}{% for b in [1, 2, 3] %}{{ loop.index0 }}{% endfor %}:{{ loop.index }} {% endfor %}"),
    ("stmt_loop_recursive", "{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': [{'n': 'c', 'c': []}]}]}] recursive %}{{ item.n }}{{ loop.depth }}{% if item.c %}({{ loop(item.c) }}){% endif %}{% endfor %}"),
    ("stmt_break", "{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("stmt_continue", "{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
    # jinja2 clears the for-else flag at the END of each iteration's body, so a break (or continue) during
    # the first iteration still runs the else block; a break in a later iteration does not.
    ("stmt_break_in_first_iteration_runs_else", "{% for x in [1, 2] %}{{ x }}{% break %}{% else %}else{% endfor %}done"),
    ("stmt_break_in_later_iteration_skips_else", "{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% else %}else{% endfor %}done"),
    ("stmt_continue_every_iteration_runs_else", "{% for x in [1, 2] %}{% continue %}{% else %}else{% endfor %}done"),
    ("stmt_loop_var_not_leaking", "{% for i in range(3) %}{% endfor %}[{{ i }}]"),
    ("stmt_set_simple", "{% set x = 5 %}{{ x * 2 }}"),
    ("stmt_set_tuple_unpack", "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set c, e = [3, 4] %}{{ c }}{{ e }}"),
    ("stmt_set_reassign_self", "{% set x = 'a' %}{% set x = x ~ 'b' %}{{ x }}"),
    # {% if %} opens no scope: a set inside it is visible after endif.
    ("stmt_set_in_if_persists", "{% if t %}{% set x = 'in' %}{% endif %}{{ x }}"),
    # A set inside a for loop does not change the variable outside the loop.
    ("stmt_set_in_for_not_leaking", "{% set x = 'out' %}{% for i in range(2) %}{% set x = i %}{% endfor %}{{ x }}"),
    ("stmt_set_in_for_undefined_after", "{% for i in range(2) %}{% set y = i %}{% endfor %}[{{ y }}]"),
    # A set in one iteration is NOT visible in the next: each iteration starts again from the outer scope.
    ("stmt_set_in_for_across_iterations", "{% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}"),
    # Reading an outer variable before a set of the same name in the loop body.
    # Before the loop body's own set, the name still reads the outer value, in every iteration.
    ("stmt_set_in_for_read_before_set", "{% set x = 'out' %}{% for i in range(2) %}{{ x }}{% set x = i %}{{ x }} {% endfor %}{{ x }}"),
    # The classic trap: a counter set inside a loop never changes the outer one (use namespace()).
    ("stmt_set_accumulate_in_for_fails", "{% set total = 0 %}{% for x in nums %}{% set total = total + x %}{% endfor %}{{ total }}"),
    ("stmt_namespace_counter", "{% set ns = namespace(count=0) %}{% for m in msgs %}{% if m.role == 'user' %}{% set ns.count = ns.count + 1 %}{% endif %}{% endfor %}{{ ns.count }}"),
    ("stmt_namespace_fields", "{% set ns = namespace(a=1, b=[]) %}{{ ns.a }} {{ ns.b }} {{ ns.missing is defined }}"),
    ("stmt_namespace_new_attr", "{% set ns = namespace() %}{% set ns.x = 3 %}{{ ns.x }}"),
    ("stmt_namespace_list_concat", "{% set ns = namespace(items=[]) %}{% for w in words %}{% set ns.items = ns.items + [w|upper] %}{% endfor %}{{ ns.items }}"),
    ("stmt_block_set", "{% set x %}a {{ n }} b{% endset %}[{{ x }}]"),
    ("stmt_block_set_filter", "{% set x | upper %}abc {{ 'd' }}{% endset %}{{ x }}"),
    # trim_blocks drops the newline after {% set x %}; the one before {% endset %} stays in the value.
    ("stmt_block_set_multiline", "{% set x %}\n  line\n{% endset %}[{{ x }}]"),
    ("stmt_filter_block", "{% filter upper %}hello {{ 'w' }}{% endfilter %}"),
    ("stmt_filter_block_chain", "{% filter trim|upper %}  x y  {% endfilter %}|"),
    ("stmt_with_scope", "{% with a = 1 %}{{ a }}{% endwith %}[{{ a }}]"),
    ("stmt_macro_positional", "{% macro m(a, b) %}{{ a }}-{{ b }}{% endmacro %}{{ m(1, 2) }}"),
    ("stmt_macro_keyword", "{% macro m(a, b) %}{{ a }}-{{ b }}{% endmacro %}{{ m(b=2, a=1) }} {{ m(1, b=3) }}"),
    ("stmt_macro_default", "{% macro m(a, b='dflt') %}{{ a }}-{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 2) }}"),
    ("stmt_macro_default_refers_to_earlier_arg", "{% macro m(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ m('x') }} {{ m('x', 'y') }}"),
    # A missing argument without a default is undefined, not an error.
    ("stmt_macro_missing_arg_undefined", "{% macro m(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ m(1) }}"),
    ("stmt_macro_calls_macro", "{% macro inner(x) %}<{{ x }}>{% endmacro %}{% macro outer(x) %}{{ inner(x) }}{{ inner(x ~ x) }}{% endmacro %}{{ outer('a') }}"),
    ("stmt_macro_reads_top_level_set", "{% set g = 'G' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}"),
    # A macro sees a top-level set made after its definition, as long as the call comes after the set.
    ("stmt_macro_reads_set_after_definition", "{% macro m() %}[{{ g }}]{% endmacro %}{% set g = 'late' %}{{ m() }}"),
    ("stmt_macro_reads_context", "{% macro m() %}{{ n }}{{ words|length }}{% endmacro %}{{ m() }}"),
    # A macro's body keeps its own whitespace; callers often |trim it.
    ("stmt_macro_output_trim", "{% macro m() %}\n  padded  \n{% endmacro %}[{{ m() }}][{{ m()|trim }}]"),
    ("stmt_macro_recursion_factorial", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}"),
    ("stmt_macro_recursion_tree", "{% macro walk(v) %}{% if v is mapping %}{% for k in v %}{{ k }}({{ walk(v[k]) }}){% endfor %}{% elif v is sequence and v is not string %}{% for i in v %}{{ walk(i) }},{% endfor %}{% else %}{{ v }}{% endif %}{% endmacro %}{{ walk(d) }}"),
    # A macro that mentions varargs/kwargs accepts extra arguments.
    ("stmt_macro_varargs_kwargs", "{% macro m(a) %}{{ a }} {{ varargs }} {{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}"),
    ("stmt_macro_call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inside {{ n }}{% endcall %}"),
    # A macro returns a string: m() ~ 1 is "51", and m()|int + 1 is 6.
    ("stmt_macro_returns_string", "{% macro m() %}5{% endmacro %}{{ m() ~ 1 }} {{ m()|int + 1 }} {{ m() is string }}"),
    ("stmt_range_forms", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(0, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {{ range(-2)|list }}"),
    ("stmt_range_in_for", "{% for i in range(3, 0, -1) %}{{ i }}{% endfor %} {{ range(5)|length }}"),
    # dict() keeps the keyword order (b before a), like a dict literal.
    ("stmt_dict_global", "{{ dict(a=1, b='x') }} {{ dict(b=1, a=2)|tojson }}"),
    ("stmt_strftime_now", "{{ strftime_now('%Y-%m-%d %d %b %Y') }}"),
    ("stmt_strftime_now_more", "{{ strftime_now('%H:%M:%S %A %B %j %I%p') }}"),
    ("stmt_comment_hides_tags", "{# {% if %} {{ x }} #}ok"),
    # The generation block (transformers' extension) renders its body.
    ("stmt_generation_block", "{% generation %}x{{ n }}{% endgeneration %}"),
    # Unknown filters/tests inside an {% if %} branch only fail if the branch runs (jinja2 >= 3.0), so a
    # template can guard them with 'is filter'; elsewhere (top level, for body, macro) they fail at compile time.
    ("stmt_guarded_unknown_filter", "{% if 'nosuchfilter' is filter %}{{ n|nosuchfilter }}{% else %}no{% endif %}"),
    ("stmt_unknown_filter_untaken_if_ok", "{% if false %}{{ x|nosuchfilter }}{% endif %}ok"),
    ("stmt_unknown_test_untaken_if_ok", "{% if false %}{{ n is nosuchtest }}{% endif %}ok"),

    # ---------------------------------------------------------------- filters
    ("filter_trim", "[{{ s|trim }}] [{{ '\n\t x \n'|trim }}]"),
    ("filter_trim_chars", "{{ 'xxhixx'|trim('x') }} {{ '--a-b--'|trim('-') }} {{ 'abcxcba'|trim('ab') }}"),
    ("filter_trim_non_string", "{{ 5|trim }}"),
    ("filter_tojson_nested", "{{ d|tojson }}"),
    ("filter_tojson_indent2", "{{ d|tojson(indent=2) }}"),
    ("filter_tojson_indent4_list_of_dicts", "{{ msgs[:2]|tojson(indent=4) }}"),
    # Empty containers stay [] and {} even with indent.
    ("filter_tojson_indent_empty_containers", "{{ {'a': [], 'b': {}, 'c': [1]}|tojson(indent=2) }}"),
    ("filter_tojson_sort_keys", "{{ {'b': 1, 'a': {'d': 2, 'c': 3}}|tojson(sort_keys=true) }} {{ {'b': 1, 'a': 2}|tojson }}"),
    ("filter_tojson_unicode", "{{ uni|tojson }}"),
    ("filter_tojson_ensure_ascii", "{{ uni|tojson(ensure_ascii=true) }}"),
    # Python json floats: 1.0 keeps ".0", 1e20 is "1e+20", 1e-7 is "1e-07".
    ("filter_tojson_floats", "{{ [1.0, 2.5, 0.1 + 0.2, 1e20, 1e-7, 10/4, 3, -0.0] |tojson }}"),
    ("filter_tojson_none_bool", "{{ [none, true, false, nothing, t]|tojson }}"),
    # Control chars become \n, \t, \r, \b, \f or \u00XX; '/', DEL (0x7f) and non-ASCII are not escaped.
    ("filter_tojson_string_escapes", r"""{{ ('q"uote' ~ "'" ~ '\n\t\r\u0001\u001f\\/\b\f\u007f')|tojson }}"""),
    # transformers' tojson is plain json.dumps: no HTML escaping of <, >, &, '.
    ("filter_tojson_html_chars", "{{ \"<a href='x'>&</a>\"|tojson }}"),
    # json.dumps turns non-string keys into strings: 1 -> "1", 2.5 -> "2.5", none -> "null".
    ("filter_tojson_tuple_and_int_keys", "{{ (1, 2)|tojson }} {{ {1: 'a', 2.5: 'b', none: 'd'}|tojson }}"),
    ("filter_tojson_separators", "{{ d|tojson(separators=(',', ':')) }}"),
    ("filter_tojson_tool_calls", "{{ msgs[3].tool_calls|tojson }}"),
    ("filter_tojson_string_number", "{{ '1'|tojson }} {{ 1|tojson }} {{ ''|tojson }}"),
    ("filter_length_and_count", "{{ s|length }} {{ words|length }} {{ d|length }} {{ undefined_name|length }} {{ words|count }} {{ uni|count }} {{ ''|length }}"),
    ("filter_items", "{% for k, v in d|items %}{{ k }}:{{ v }} {% endfor %}{{ undefined_name|items|list }}"),
    ("filter_list", "{{ 'abc'|list }} {{ d|list }} {{ (1, 2)|list }} {{ uni|list|length }}"),
    ("filter_first_last", "{{ words|first }} {{ words|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}]"),
    ("filter_join", "{{ words|join }} {{ words|join(', ') }} {{ msgs|join('/', attribute='role') }} {{ nums|join('-') }}"),
    ("filter_join_mixed", "{{ [1, none, 'a', true, 1.0]|join(',') }} {{ [[1, 2], [3]]|join(';') }}"),
    ("filter_upper_lower", "{{ 'aBc'|upper }} {{ 'aBc'|lower }} {{ uni|upper }} {{ 'ÉA'|lower }}"),
    ("filter_upper_non_string", "{{ 1|upper }} {{ none|upper }} {{ true|lower }}"),
    # capitalize lowercases the rest of the string.
    ("filter_capitalize", "{{ 'hELLO wORLD'|capitalize }} {{ ''|capitalize }}"),
    # jinja2's title is not str.title: words start only after spaces, '-', '(', '{', '[', '<'.
    ("filter_title", "{{ 'hello-world foo(bar)'|title }} {{ \"it's o'neil x2y\"|title }} {{ 'HELLO wORLD'|title }}"),
    ("filter_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ s|replace(' ', '') }}"),
    # default replaces only undefined unless boolean=true; none is defined.
    ("filter_default", "{{ undefined_name|default('dflt') }} [{{ nothing|default('dflt') }}] [{{ false|default('dflt') }}] {{ false|default('dflt', true) }} {{ ''|default('dflt', boolean=true) }} {{ undefined_name|d('d') }} {{ nothing|d('x', true) }}"),
    ("filter_default_missing_attr", "{{ d.missing|default('m') }} {{ msgs[0].name|default('anon') }} {{ d.a|default('m') }}"),
    ("filter_string", "{{ 1|string ~ 2 }} {{ none|string }} {{ [1, 'a']|string }} {{ true|string }} {{ 1.0|string }}"),
    ("filter_safe", "{{ '<b>'|safe }}"),
    ("filter_escape", "{{ '<b>&\"\\''|escape }} {{ '<i>'|e }} {{ 5|e }}"),
    # escape returns Markup: with +, Markup escapes the other string too; ~ just joins the text.
    ("filter_escape_markup_plus_vs_tilde", "{{ ('<'|e) + '<' }} {{ ('<'|e) ~ '<' }}"),
    # int: '4.7' parses as a float then truncates; unparseable gives the default (0).
    ("filter_int", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ 4.7|int }} {{ -4.7|int }} {{ ' 12 '|int }} {{ true|int }} {{ none|int }} {{ ''|int }}"),
    ("filter_int_base", "{{ '0x1A'|int(0, 16) }} {{ '11'|int(base=2) }} {{ '1_000'|int }}"),
    ("filter_float", "{{ '2.5'|float }} {{ 'x'|float }} {{ 3|float }} {{ 'x'|float(1.5) }} {{ '1e3'|float }} {{ ' 7 '|float }}"),
    ("filter_abs", "{{ neg|abs }} {{ -2.5|abs }} {{ (-3)|abs }} {{ f|abs }}"),
    # round uses Python's round (half to even): 2.5 -> 2.0, 3.5 -> 4.0, 2.675 -> 2.67 (binary float).
    ("filter_round", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ -2.5|round }} {{ 0.5|round }} {{ 1.5|round }}"),
    ("filter_round_methods", "{{ 2.7|round(0, 'floor') }} {{ 2.1|round(method='ceil') }} {{ 2.678|round(2, 'floor') }} {{ -2.5|round(method='floor') }} {{ 2.5|round(method='ceil') }}"),
    # round of an int stays an int (no ".0"); of a float it is a float.
    ("filter_round_int", "{{ 7|round }} {{ 7|round(2) }} {{ 7.0|round }} {{ 1234|round(-2) }}"),
    ("filter_reverse", "{{ 'abc'|reverse }} {{ uni|reverse }} {{ words|reverse|join(',') }} {{ words|reverse|list }}"),
    # sort is case-insensitive by default and stable.
    ("filter_sort", "{{ words|sort }} {{ words|sort(reverse=true) }} {{ words|sort(case_sensitive=true) }} {{ nums|sort }} {{ floats|sort(reverse=true) }}"),
    ("filter_sort_attribute", "{{ msgs|sort(attribute='role')|map(attribute='content')|join(',') }}"),
    # Booleans sort as numbers (true == 1).
    ("filter_sort_mixed_numbers", "{{ [2, 1.5, true, 0]|sort }}"),
    # unique is case-insensitive by default and keeps the first spelling seen.
    # unique compares with Python equality, so 1, 1.0 and true are one value (the first is kept).
    ("filter_unique", "{{ words|unique|list }} {{ words|unique(case_sensitive=true)|list }} {{ ['A', 'a', 'b']|unique|list }} {{ [1, 1.0, true]|unique|list }}"),
    # min/max compare strings case-insensitively by default; empty gives undefined.
    ("filter_min_max", "{{ words|min }} {{ words|max }} {{ nums|min }} {{ nums|max }} {{ words|max(case_sensitive=true) }} [{{ []|min }}]"),
    ("filter_min_max_attribute", "{{ (msgs|max(attribute='role')).role }} {{ (msgs|min(attribute='content')).role }}"),
    ("filter_sum", "{{ nums|sum }} {{ floats|sum }} {{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }} {{ nums|sum(start=10) }} {{ []|sum }}"),
    ("filter_map_attribute", "{{ msgs|map(attribute='role')|join(',') }} {{ msgs|map(attribute='name', default='anon')|join(',') }}"),
    ("filter_map_filter_name", "{{ words|map('upper')|join }} {{ nums|map('string')|list }} {{ ['a', 'b']|map('replace', 'a', 'z')|join }}"),
    # map('default', 'd') replaces undefined but not none.
    ("filter_map_default", "{{ [none, 'x', undefined_name]|map('default', 'd')|join(',') }}"),
    # A missing attribute maps to undefined, which prints as "Undefined" inside a list repr.
    ("filter_map_undefined_attribute", "{{ msgs|map(attribute='name')|list }}"),
    ("filter_select_reject", "{{ nums|select('odd')|list }} {{ nums|reject('odd')|list }} {{ [1, undefined_name, 2]|select('defined')|list }} {{ words|select('equalto', 'a')|list }} {{ [1, 'a', none]|select('string')|list }}"),
    ("filter_select_truthiness", "{{ [0, 1, '', 'a', none, [], [0]]|select|list }} {{ [0, 1, '']|reject|list }}"),
    ("filter_select_operator_tests", "{{ nums|select('>', 1)|list }} {{ nums|select('ne', 1)|list }} {{ words|reject('in', ['a', 'b'])|list }}"),
    ("filter_selectattr_equalto", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }} {{ msgs|selectattr('role', '==', 'assistant')|list|length }}"),
    ("filter_rejectattr_equalto", "{{ msgs|rejectattr('role', 'equalto', 'user')|map(attribute='role')|join(',') }}"),
    ("filter_selectattr_defined", "{{ msgs|selectattr('tool_calls', 'defined')|list|length }} {{ msgs|rejectattr('tool_calls', 'defined')|list|length }} {{ msgs|selectattr('tool_calls', 'undefined')|map(attribute='role')|join(',') }}"),
    ("filter_selectattr_truthiness", "{{ msgs|selectattr('content')|map(attribute='role')|join(',') }} {{ msgs|rejectattr('content')|map(attribute='role')|join(',') }}"),
    ("filter_selectattr_first", "{{ (msgs|selectattr('role', 'equalto', 'tool')|first).content }} [{{ msgs|selectattr('role', 'equalto', 'system')|first }}]"),
    ("filter_selectattr_nested_attribute", "{{ msgs|selectattr('content', 'in', ['hi', 'q'])|list|length }}"),
    # dictsort sorts case-insensitively and yields (key, value) tuples.
    ("filter_dictsort", "{{ {'b': 2, 'a': 3, 'C': 1}|dictsort }} {{ {'b': 2, 'a': 3, 'C': 1}|dictsort(by='value') }} {{ {'b': 2, 'a': 3, 'C': 1}|dictsort(reverse=true) }} {{ {'b': 2, 'a': 3, 'C': 1}|dictsort(true) }}"),
    ("filter_dictsort_loop", "{% for k, v in {'z': 1, 'y': 2}|dictsort %}{{ k }}{{ v }}{% endfor %}"),
    # indent: width 4 by default, the first line and blank lines untouched unless asked.
    ("filter_indent_default", "{{ multiline|indent }}"),
    ("filter_indent_width2", "{{ multiline|indent(2) }}"),
    ("filter_indent_first", "{{ multiline|indent(2, true) }}"),
    ("filter_indent_blank", "{{ multiline|indent(2, blank=true) }}"),
    ("filter_indent_string_width", "{{ multiline|indent('> ', first=true) }}"),
    ("filter_indent_trailing_newline", "{{ 'a\nb\n'|indent(2) }}|"),
    # center follows Python's str.center, which puts an odd extra space on the left or right depending on widths.
    ("filter_center", "[{{ 'ab'|center(6) }}] [{{ 'abc'|center(6) }}] [{{ 'ab'|center(5) }}] [{{ 'a'|center(4) }}] [{{ 'abc'|center(2) }}]"),
    # wordcount counts \w+ runs: "it's" is 2 words, "a-b" is 2, "c_d" is 1.
    ("filter_wordcount", "{{ 'hello big  world'|wordcount }} {{ \"it's a-b c_d\"|wordcount }} {{ uni|wordcount }}"),
    ("filter_format", "{{ '%s and %s'|format(1, 'b') }} {{ '%(x)s'|format(x=1) }} {{ '%.2f'|format(f) }} {{ '%5d|%-5d|'|format(n, n) }}"),
    # attr looks up attributes only, never dict keys: d|attr('a') is undefined.
    ("filter_attr", "[{{ d|attr('a') }}] {{ d|attr('keys') is callable }} [{{ msgs[0]|attr('role') }}]"),
    ("filter_batch", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }}"),
    # groupby sorts the groups by key (not first-seen order).
    ("filter_groupby", "{% for g in msgs|groupby('role') %}{{ g.grouper }}:{{ g.list|length }} {% endfor %}"),
    # truncate(9): length 9 includes the '...'; without killwords it cuts at a word boundary; leeway 5 means short overflows are kept.
    ("filter_truncate", "{{ 'hello world foo bar'|truncate(9) }} {{ 'hello world foo bar'|truncate(9, true) }} {{ 'hello'|truncate(9) }}"),
    ("filter_chain", "{{ s|trim|lower|replace(',', '')|title }}"),

    # ---------------------------------------------------------------- tests
    ("test_defined_undefined", "{{ n is defined }} {{ nope is defined }} {{ nope is undefined }} {{ nothing is defined }}"),
    ("test_none", "{{ nothing is none }} {{ nope is none }} {{ 0 is none }}"),
    ("test_boolean", "{{ t is boolean }} {{ 1 is boolean }} {{ nothing is boolean }}"),
    ("test_true_false", "{{ t is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}"),
    # true is not an integer for the 'integer' test...
    ("test_integer", "{{ n is integer }} {{ f is integer }} {{ true is integer }} {{ 1.0 is integer }}"),
    ("test_float", "{{ f is float }} {{ n is float }} {{ 1.0 is float }}"),
    # ...but it is a number for the 'number' test.
    ("test_number", "{{ n is number }} {{ f is number }} {{ true is number }} {{ '1' is number }} {{ nothing is number }}"),
    ("test_string", "{{ s is string }} {{ 1 is string }} {{ none is string }} {{ nope is string }}"),
    ("test_mapping", "{{ d is mapping }} {{ words is mapping }} {{ msgs[0] is mapping }} {{ 'a' is mapping }}"),
    # undefined is iterable (as empty).
    ("test_iterable", "{{ 'ab' is iterable }} {{ words is iterable }} {{ d is iterable }} {{ 1 is iterable }} {{ nope is iterable }} {{ nothing is iterable }}"),
    # a dict counts as a sequence (it has len and []), so does a string.
    ("test_sequence", "{{ 'ab' is sequence }} {{ words is sequence }} {{ d is sequence }} {{ 1 is sequence }} {{ (1, 2) is sequence }}"),
    ("test_callable", "{{ range is callable }} {{ n is callable }} {{ 'a'.upper is callable }} {{ namespace is callable }} {{ raise_exception is callable }}"),
    ("test_even_odd", "{{ n is odd }} {{ n is even }} {{ 0 is even }} {{ neg is odd }}"),
    ("test_divisibleby", "{{ 9 is divisibleby 3 }} {{ 9 is divisibleby(3) }} {{ 10 is divisibleby 3 }} {{ n is divisibleby 7 }}"),
    ("test_eq", "{{ n is eq 7 }} {{ n is equalto 7 }} {{ n == 7 }} {{ 'a' is eq 'b' }} {{ n is eq(7.0) }}"),
    ("test_ne", "{{ n is ne 7 }} {{ n is ne 8 }}"),
    ("test_comparisons", "{{ n is lt 8 }} {{ n is gt 8 }} {{ n is le 7 }} {{ n is ge 8 }} {{ n is lessthan 8 }} {{ n is greaterthan 3 }}"),
    ("test_sameas", "{{ nothing is sameas none }} {{ t is sameas true }} {{ 1 is sameas true }} {{ words is sameas words }}"),
    ("test_in", "{{ 'a' is in words }} {{ 'x' is in 'xyz' }} {{ 'z' is in d }} {{ 'a' is in d }}"),
    ("test_lower_upper", "{{ 'abc' is lower }} {{ 'Abc' is lower }} {{ 'ABC' is upper }} {{ '123' is upper }} {{ 'A1' is upper }}"),
    ("test_is_not_none", "{{ nothing is not none }} {{ n is not none }} {{ nope is not none }}"),
    ("test_string_and_length", "{{ empty is string and empty|length > 0 }} {{ s is string and s|length > 0 }}"),
    ("test_filter_and_test", "{{ 'upper' is filter }} {{ 'nosuch' is filter }} {{ 'odd' is test }} {{ 'tojson' is filter }}"),

    # ---------------------------------------------------------------- methods
    ("method_strip", "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}]"),
    ("method_strip_chars", "{{ 'xxhixx'.strip('x') }} {{ 'xxhixx'.lstrip('x') }} {{ 'xxhixx'.rstrip('x') }} {{ 'abcba'.strip('ab') }}"),
    ("method_split_no_arg", "{{ '  a  b  '.split() }} {{ ''.split() }} {{ 'a\tb\nc'.split() }}"),
    ("method_split_sep", "{{ 'a,b,c'.split(',') }} {{ 'a,,b'.split(',') }} {{ 'a, b'.split(', ') }} {{ ''.split(',') }} {{ '  a  b  '.split(' ') }}"),
    ("method_split_maxsplit", "{{ 'a,b,c'.split(',', 1) }} {{ 'a b  c'.split(none, 1) }} {{ 'a,b,c'.split(',', maxsplit=1) }}"),
    ("method_rsplit", "{{ 'a,b,c'.rsplit(',', 1) }} {{ 'a/b/c'.split('/')[-1] }}"),
    ("method_splitlines", "{{ multiline.splitlines() }} {{ 'a\nb\n'.splitlines() }} {{ ''.splitlines() }}"),
    ("method_startswith_endswith", "{{ s.strip().startswith('Hello') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} {{ 'abc'.endswith(('x', 'y')) }} {{ 'abc'.startswith('') }}"),
    # str.title (the method) differs from the title filter: "it's" -> "It'S", "x2y" -> "X2Y".
    ("method_case", "{{ 'aBc'.upper() }} {{ 'aBc'.lower() }} {{ \"it's o'neil x2y\".title() }} {{ 'hELLO'.capitalize() }} {{ uni.upper() }}"),
    ("method_replace", "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ multiline.replace('\n', '|') }}"),
    ("method_find_count", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.index('e') }} {{ 'hello'.count('l') }} {{ uni.find('日') }}"),
    ("method_join", "{{ ', '.join(words) }} {{ '-'.join('abc') }} {{ ''.join(['a', 'b']) }}"),
    ("method_format_int_bases", "{{ '{:x}|{:#x}|{:#o}|{:#b}|{:b}|{:+d}|{:X}'.format(255, 255, 8, 5, -5, 3, -255) }}"),
    ("method_format", "{{ '{} {}'.format(1, 2) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}'.format(name='x') }} {{ '{:>5}|{:.2f}'.format('a', f) }}"),
    ("method_predicates", "{{ '123'.isdigit() }} {{ '12a'.isdigit() }} {{ 'abc'.isalpha() }} {{ '  '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ ''.isdigit() }} {{ ''.isspace() }}"),
    ("method_dict_get", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ msgs[3].get('tool_calls')[0].id }}"),
    ("method_dict_keys_values_items", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}"),
    ("method_list_index_count", "{{ words.index('a') }} {{ words.count('a') }} {{ nums.index(2) }}"),
    ("method_unicode_split", "{{ uni.split(' ') }} {{ uni.split(' ')[1]|length }}"),

    # ---------------------------------------------------------------- errors
    ("error_undefined_attr", "{{ nope.x }}"),
    ("error_attr_of_none_chain", "{{ nothing.x.y }}"),
    ("error_undefined_call", "{{ nope() }}"),
    # Arithmetic on undefined raises (printing or ~ does not).
    ("error_undefined_arithmetic", "{{ nope + 1 }}"),
    ("error_int_plus_str", "{{ 1 + 'a' }}"),
    ("error_str_plus_int", "{{ 'a' + 1 }}"),
    ("error_none_plus_int", "{{ none + 1 }}"),
    ("error_str_times_str", "{{ 'a' * 'b' }}"),
    ("error_list_append_sandbox", "{{ words.append('x') }}"),
    ("error_dict_update_sandbox", "{{ d.update({'x': 1}) }}"),
    ("error_compare_str_int", "{{ 'a' < 1 }}"),
    ("error_sort_mixed_types", "{{ [1, 'a']|sort }}"),
    ("error_unknown_filter", "{{ x|nosuchfilter }}"),
    # Inside a taken {% if %} branch the unknown filter fails at render time, with another type and message.
    ("error_unknown_filter_in_taken_if", "{% if true %}{{ n|nosuchfilter }}{% endif %}"),
    # Inside a for body (even one that never iterates) it fails at compile time.
    ("error_unknown_filter_in_for_body", "{% for x in [] %}{{ x|nosuchfilter }}{% endfor %}ok"),
    ("error_unknown_test", "{{ n is nosuchtest }}"),
    ("error_unclosed_block", "{% if t %}x"),
    ("error_unclosed_variable", "{{ n "),
    ("error_endif_without_if", "{% endif %}"),
    ("error_unknown_tag", "{% foo %}"),
    # The 'do' extension is not loaded in transformers' environment.
    ("error_do_tag_unavailable", "{% do words.append(1) %}"),
    # jinja2 itself accepts this; Python rejects the generated code (the message names a generated line).
    ("error_break_outside_loop", "{% break %}"),
    # ~ binds tighter than +: 1 + 2 ~ 3 is 1 + '23', and 'a' ~ 1 + 2 is 'a1' + 2.
    ("error_precedence_plus_tilde", "{{ 1 + 2 ~ 3 }}"),
    ("error_precedence_tilde_plus", "{{ 'a' ~ 1 + 2 }}"),
    ("error_division_by_zero", "{{ 1/0 }}"),
    ("error_modulo_by_zero", "{{ n % 0 }}"),
    # int is a filter, not a global function.
    ("error_int_as_function", "{{ int('x') }}"),
    ("error_macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
    ("error_macro_unknown_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}"),
    ("error_raise_exception", "{{ raise_exception('boom') }}"),
    ("error_raise_exception_in_if", "{% if msgs[0].role != 'system' %}{{ raise_exception('first message must be system') }}{% endif %}"),
    ("error_for_over_none", "{% for x in nothing %}{% endfor %}"),
    ("error_tojson_undefined", "{{ nope|tojson }}"),
    ("error_set_attr_non_namespace", "{% set d.a = 2 %}{{ d.a }}"),
    ("error_loop_outside_for", "{{ loop.index }}"),
    ("error_string_index_not_found", "{{ 'hello'.index('z') }}"),
    ("error_filter_missing_arg", "{{ 'a'|replace('a') }}"),
]


# ------------------------------------------------------------------ rendering

def render(source):
    """One case's result: {"output": ...} or {"error": ..., "error_type": ...}."""
    try:
        return {"output": make_env().from_string(source).render(**CONTEXT)}
    except Exception as exc:  # noqa: BLE001 -- every failure is a recorded outcome
        return {"error": str(exc), "error_type": type(exc).__name__}


def build():
    names = [name for name, _ in CASES]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        sys.exit(f"duplicate case names: {', '.join(duplicates)}")
    cases = [{"name": name, "template": source, **render(source)} for name, source in CASES]
    return {"generator": f"tests/reference/jinja_constructs_reference.py, jinja2 {jinja2.__version__}",
            "context": CONTEXT,
            "cases": cases}


def dumps(doc):
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write constructs.json")
    mode.add_argument("--check", action="store_true", help="re-render and compare with constructs.json")
    ap.add_argument("--show", action="store_true", help="print every case's result")
    args = ap.parse_args()

    doc = build()
    if args.show:
        for case in doc["cases"]:
            result = (f"{case['error_type']}: {case['error']}" if "error" in case else case["output"])
            print(f"--- {case['name']}\n{case['template']}\n=> {result!r}")
    text = dumps(doc)
    if args.write:
        OUTPUT.write_text(text, encoding="utf-8", newline="\n")
        errors = sum("error" in c for c in doc["cases"])
        print(f"wrote {OUTPUT} ({len(text.encode('utf-8'))} bytes, {len(doc['cases'])} cases, {errors} errors)")
        return 0

    stored = load_stored(OUTPUT, doc["generator"])
    if stored is None:
        return 1
    problems = []
    if stored.get("context") != doc["context"]:
        problems.append("context differs")
    old = {c["name"]: c for c in stored.get("cases", [])}
    new = {c["name"]: c for c in doc["cases"]}
    for name in list(new) + [n for n in old if n not in new]:
        if name not in new:
            problems.append(f"{name}: in constructs.json but not in CASES")
        elif name not in old:
            problems.append(f"{name}: in CASES but missing from constructs.json")
        elif old[name] != new[name]:
            problems.append(f"{name}: differs")
    if problems:
        print("\n".join(problems))
        print(f"FAIL: {len(problems)} differences from {OUTPUT}")
        return 1
    print(f"OK: {len(new)} cases match {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
