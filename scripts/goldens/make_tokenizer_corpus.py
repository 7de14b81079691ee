#!/usr/bin/env python3
"""Generate the tokenizer test corpus tests/data/tokenizer/gemma3_corpus.txt (deterministic).

One test case per line (UTF-8, '\\n' line ends, file ends with '\\n').  No line contains a
character that any common "split lines" routine treats as a line break (\\n \\r \\v \\f \\x1c-\\x1e
\\x85 U+2028 U+2029), and no line is empty, so a reader may split on '\\n' and drop the final
empty piece.  Leading/trailing spaces and tabs ARE significant: do not strip.

Multi-line cases (text containing '\\n', '\\r\\n', ...) cannot be lines of this file; they are
returned by multiline_cases() and stored, JSON-escaped, after the corpus lines in
gemma3_corpus_goldens.json by make_gemma_tokenizer_goldens.py.

All text below was written for this corpus (plain sentences, code fragments, symbol runs); the
generated lines combine these pieces with a seeded PRNG, so the output is byte-identical on
every run and platform (Python >= 3.8).

Usage: python make_tokenizer_corpus.py [--out PATH] [--seed N]
"""
from __future__ import annotations

import argparse
import random
import unicodedata
from pathlib import Path

SEED = 20260301
MIN_LINES = 2000
BAD_CHARS = set("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")

# --------------------------------------------------------------------------------------------
# Hand-written material
# --------------------------------------------------------------------------------------------

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world",
    "Hello, world!",
    "hello world",
    "HELLO WORLD",
    " Hello world",
    "Hello  world",
    "It's a beautiful day, isn't it?",
    "I've been told he'd rather we'll do it ourselves; they're sure.",
    "She sells sea shells by the sea shore.",
    "A journey of a thousand miles begins with a single step.",
    "The rain in Spain stays mainly in the plain.",
    "Don't count your chickens before they hatch.",
    "The committee will reconvene on Tuesday at 3:45 p.m. sharp.",
    "Antidisestablishmentarianism is a very long word.",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "supercalifragilisticexpialidocious",
    "The U.S.A. and the U.K. signed the treaty in 1945.",
    "e.g. i.e. etc. vs. Mr. Mrs. Dr. St. Jr.",
    "Tokenization is the first step of every language model pipeline.",
    "On-device inference must be fast, small and correct.",
    "GenieX loads GGUF files and runs them on the phone.",
    "What is the capital of France? The capital of France is Paris.",
    "Write a haiku about autumn leaves falling in the wind.",
    "Summarize the following paragraph in one sentence.",
    "Translate to German: Where is the train station?",
    "The model said: \"I cannot answer that.\"",
    "He said, 'Well... I suppose so.'",
    "camelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_CASE",
    "iPhone, eBay, YouTube, McDonald's, O'Reilly, rock'n'roll",
    "re-enter co-operate self-driving state-of-the-art well-known",
    "The year 2024 had 366 days; 2023 had 365.",
    "Call me at (555) 123-4567 or +1-800-555-0199.",
    "Temperatures ranged from -40°C to +52.3°C.",
    "Prices: $5, $19.99, €1.234,56, £7, ¥1000, ₹250, ₿0.001",
    "Room 101, Floor 7, Building B-12",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz 0123456789",
    "The café served crème brûlée and a jalapeño piñata at the naïve fiancée's soirée.",
    "Zoë, Chloë and Noël met at the Förster's château in Zürich.",
    "Once upon a time, in a land far, far away, there lived a curious tokenizer.",
    "All work and no play makes Jack a dull boy.",
    "To be, or not to be, that is the question.",
    "Four score and seven years ago our fathers brought forth on this continent a new nation.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael.",
    "In the beginning was the word.",
    "Roses are red, violets are blue.",
    "Ask not what your country can do for you.",
    "The mitochondria is the powerhouse of the cell.",
    "Water boils at 100 degrees Celsius at sea level.",
]

LANGS = {
    "de": [
        "Der schnelle braune Fuchs springt über den faulen Hund.",
        "Äpfel, Öl und Übermut sind typisch für die Straße.",
        "Donaudampfschifffahrtsgesellschaftskapitän",
        "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz",
        "Ich hätte gern ein Stück Käsekuchen, bitte.",
        "Wir treffen uns um 14:30 Uhr am Hauptbahnhof.",
        "Grüß Gott! Wie geht's dir heute?",
        "Die Größe der Maßnahme ist noch unklar.",
        "Fußgängerübergänge müssen gut beleuchtet sein.",
        "Das Wetter in München ist heute überraschend schön.",
    ],
    "fr": [
        "Le renard brun rapide saute par-dessus le chien paresseux.",
        "Où est la bibliothèque ? Elle est à côté de l'église.",
        "J'ai mangé une crêpe au café près de la gare.",
        "L'été dernier, nous sommes allés à la mer.",
        "Ça va très bien, merci ! Et vous ?",
        "« Bonjour », dit-il avec un sourire.",
        "Les élèves étudient l'histoire de la Révolution française.",
        "Qu'est-ce que c'est ? C'est un œuf de Pâques.",
        "Il fait beau aujourd'hui à Montréal.",
        "L'hôpital se trouve au bout de la rue.",
    ],
    "es": [
        "El rápido zorro marrón salta sobre el perro perezoso.",
        "¿Dónde está el baño? ¡Gracias!",
        "Mañana vamos a la playa con mis niños.",
        "El pingüino comió un jalapeño en Logroño.",
        "La canción del año fue muy popular en España.",
        "¿Cuántos años tienes? Tengo veintiún años.",
        "Él también habló con la señora García.",
        "Hace mucho calor en Sevilla durante el verano.",
        "Me gustaría una mesa para dos, por favor.",
        "Los murciélagos vuelan de noche.",
    ],
    "it": [
        "La volpe marrone salta sopra il cane pigro.",
        "Perché non vieni con noi stasera?",
        "Così è la vita, caffè e città.",
        "L'università è chiusa il lunedì.",
        "Quest'anno andremo in vacanza in Sicilia.",
    ],
    "pt": [
        "A rápida raposa marrom pula sobre o cão preguiçoso.",
        "Não sei se vou conseguir chegar a tempo.",
        "A informação está disponível na biblioteca pública.",
        "Você já experimentou pão de queijo?",
        "As crianças brincam no jardim à tarde.",
    ],
    "nl": [
        "De snelle bruine vos springt over de luie hond.",
        "Hoe gaat het met je? Het gaat goed, dank je.",
        "Wij fietsen elke dag naar het werk.",
    ],
    "sv": [
        "Den snabba bruna räven hoppar över den lata hunden.",
        "Jag älskar att äta kanelbullar på fikapausen.",
        "Smörgåsbord och räksmörgås är svenska klassiker.",
    ],
    "pl": [
        "Zażółć gęślą jaźń.",
        "Chrząszcz brzmi w trzcinie w Szczebrzeszynie.",
        "Dzień dobry! Jak się masz?",
        "W Łodzi było wczoraj bardzo zimno.",
        "Źdźbło trawy kołysało się na wietrze.",
        "Proszę o rachunek.",
    ],
    "cs": [
        "Příliš žluťoučký kůň úpěl ďábelské ódy.",
        "Dobrý den, jak se máte?",
        "Strč prst skrz krk.",
    ],
    "tr": [
        "Pijamalı hasta yağız şoföre çabucak güvendi.",
        "İstanbul'da hava bugün çok güzel.",
        "Çocuklar bahçede oynuyor.",
        "Ağaç dallarında kuşlar ötüyor.",
        "Türkçe öğrenmek ilginç ve eğlenceli.",
        "Iğdır ile İzmir arasında uçuş var mı?",
    ],
    "ru": [
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "Привет, мир!",
        "Москва — столица России.",
        "Я люблю читать книги по вечерам.",
        "Сегодня хорошая погода, не правда ли?",
        "Ёжик в тумане — известный мультфильм.",
        "Широкая электрификация южных губерний даст мощный толчок подъёму сельского хозяйства.",
        "Достопримечательности",
    ],
    "uk": [
        "Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів!",
        "Доброго ранку! Як справи?",
        "Київ — столиця України.",
    ],
    "bg": [
        "Нещо на Български",
        "Добро утро! Как сте?",
        "София е столицата на България.",
    ],
    "el": [
        "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
        "Γειά σου Κόσμε!",
        "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
        "Καλημέρα, τι κάνεις;",
        "Το αλφάβητο: Α Β Γ Δ Ε Ζ Η Θ Ι Κ Λ Μ Ν Ξ Ο Π Ρ Σ Τ Υ Φ Χ Ψ Ω",
        "Ἐν ἀρχῇ ἦν ὁ λόγος.",
    ],
    "ar": [
        "مرحبا بالعالم",
        "السلام عليكم ورحمة الله وبركاته",
        "القاهرة هي عاصمة مصر.",
        "أحب القراءة في المساء.",
        "كيف حالك اليوم؟",
        "العدد ١٢٣٤٥٦٧٨٩٠ مكتوب بالأرقام العربية.",
        "الْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ",
        "ذهبتُ إلى السوق واشتريتُ خبزاً وحليباً.",
    ],
    "he": [
        "שלום עולם",
        "ירושלים היא עיר עתיקה.",
        "מה שלומך היום?",
        "אני אוהב ללמוד שפות חדשות.",
        "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    ],
    "fa": [
        "سلام دنیا",
        "تهران پایتخت ایران است.",
        "من کتاب می‌خوانم.",
    ],
    "hi": [
        "नमस्ते दुनिया",
        "भारत एक विशाल देश है।",
        "मुझे हिंदी सीखना पसंद है।",
        "आज मौसम बहुत अच्छा है।",
        "क्या आप मेरी मदद कर सकते हैं?",
        "संख्याएँ: १२३४५६७८९०",
        "क्षत्रिय, ज्ञान, श्रृंगार, द्वार",
    ],
    "bn": [
        "হ্যালো বিশ্ব",
        "আমি বাংলায় কথা বলি।",
        "ঢাকা বাংলাদেশের রাজধানী।",
        "আজ আকাশ খুব পরিষ্কার।",
        "সংখ্যা: ০১২৩৪৫৬৭৮৯",
    ],
    "ta": [
        "வணக்கம் உலகம்",
        "தமிழ் ஒரு பழமையான மொழி.",
    ],
    "te": [
        "హలో ప్రపంచం",
        "తెలుగు భాష చాలా అందమైనది.",
    ],
    "th": [
        "สวัสดีชาวโลก",
        "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
        "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
        "ฉันชอบกินข้าวเหนียวมะม่วง",
        "ขอบคุณมากครับ",
        "ตัวเลขไทย: ๐๑๒๓๔๕๖๗๘๙",
    ],
    "km": [
        "កាន់តែពិសេសអាចខលចេញ",
        "សួស្តីពិភពលោក",
    ],
    "lo": ["ສະບາຍດີໂລກ"],
    "my": ["မင်္ဂလာပါ ကမ္ဘာလောက"],
    "ka": ["გამარჯობა მსოფლიო"],
    "hy": ["Բարեւ աշխարհ"],
    "am": ["ሰላም ልዑል"],
    "zh": [
        "你好，世界！",
        "我想在apple工作1314151天～",
        "今天天气很好，我们去公园散步吧。",
        "北京是中华人民共和国的首都。",
        "学而时习之，不亦说乎？",
        "机器学习和深度学习是人工智能的重要分支。",
        "這是繁體中文的句子。",
        "一二三四五六七八九十百千万亿",
        "他说：“我明天再来。”",
        "（括号）【方括号】《书名号》",
    ],
    "ja": [
        "こんにちは世界",
        "私は日本語を勉強しています。",
        "東京は日本の首都です。",
        "カタカナとひらがなと漢字を混ぜて書きます。",
        "ｶﾀｶﾅの半角文字とＡＢＣの全角文字",
        "吾輩は猫である。名前はまだ無い。",
        "すみません、駅はどこですか？",
        "ラーメンを食べに行きましょう！",
    ],
    "ko": [
        "안녕하세요 세계",
        "저는 한국어를 공부하고 있어요.",
        "서울은 대한민국의 수도입니다.",
        "오늘 날씨가 정말 좋네요!",
        "감사합니다. 또 만나요.",
        "ㄱㄴㄷㄹㅁㅂㅅㅇㅈㅊㅋㅌㅍㅎ",
    ],
    "vi": [
        "Xin chào thế giới",
        "Cửa Việt",
        "Tôi đang học tiếng Việt.",
        "Hà Nội là thủ đô của Việt Nam.",
        "Những người bạn của tôi rất thân thiện.",
        "Phở bò là món ăn nổi tiếng.",
        "Trường Đại học Bách khoa",
    ],
    "id": [
        "Halo dunia! Apa kabar?",
        "Saya suka makan nasi goreng.",
    ],
    "sw": [
        "Habari ya dunia! Jina langu ni Amani.",
        "Ninapenda kusoma vitabu.",
    ],
    "fi": [
        "Hyvää huomenta! Mitä kuuluu?",
        "Lentokonesuihkuturbiinimoottoriapumekaanikkoaliupseerioppilas",
    ],
    "hu": [
        "Árvíztűrő tükörfúrógép",
        "Jó napot kívánok!",
    ],
    "ro": ["Bună ziua! Ce mai faci? Știință și țară."],
    "is": ["Þú ert að læra íslensku; það er gaman."],
    "ga": ["Dia duit! Conas atá tú?"],
    "cy": ["Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"],
    "eo": ["Eĥoŝanĝo ĉiuĵaŭde"],
}

CODE = [
    # Python
    "def fibonacci(n: int) -> int:",
    "    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "import numpy as np; x = np.arange(10).reshape(2, 5)",
    "print(f\"{name!r:>10} = {value:.3f}\")",
    "for i, (k, v) in enumerate(sorted(d.items(), key=lambda kv: -kv[1])):",
    "class Tokenizer(object):",
    "        self._cache: dict[str, list[int]] = {}",
    "if __name__ == \"__main__\":",
    "    raise ValueError(f'unexpected token {tok!r} at {pos}')",
    "result = [x**2 for x in range(100) if x % 3 == 0]",
    "@dataclass(frozen=True)",
    "async def fetch(session, url): return await session.get(url)",
    "# TODO: handle the edge case where len(s) == 0",
    "'''docstring with ''quotes'' inside'''",
    "lambda *args, **kwargs: None",
    "assert tokens == [2, 9259, 1902], tokens",
    # C / C++
    "#include <iostream>",
    "#include \"geniex/tokenizer.h\"",
    "int main(int argc, char** argv) { return 0; }",
    "std::vector<int32_t> ids; ids.reserve(n_tokens);",
    "template <typename T> constexpr T max(T a, T b) noexcept { return a > b ? a : b; }",
    "for (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "auto it = std::find_if(v.begin(), v.end(), [&](const auto& x) { return x->id == id; });",
    "static_assert(sizeof(uint64_t) == 8, \"unexpected size\");",
    "#define GGML_ASSERT(x) do { if (!(x)) { abort(); } } while (0)",
    "std::unique_ptr<Model> m = std::make_unique<Model>(path);",
    "ptr->next = nullptr; // end of list",
    "/* multi-line comment on one line */ x <<= 2; y >>= 3; z ^= ~w;",
    "namespace geniex::tokenizer { class Vocab final {}; }",
    "if (a && b || !c) { return -1; } else if (a != b) { return a <=> b; }",
    # JavaScript / TypeScript
    "const add = (a, b) => a + b;",
    "console.log(`Hello, ${name}! You have ${count} new messages.`);",
    "document.getElementById('app').addEventListener('click', () => {});",
    "export default function App({ title = 'Untitled' }) { return null; }",
    "let x = a ?? b; let y = obj?.prop?.[key]; x ||= 1; y &&= 2;",
    "fetch('/api/v1/users?id=42&sort=desc').then(r => r.json()).catch(console.error);",
    "interface User { id: number; name: string; tags?: string[] }",
    "const re = /^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@example\\.com$/i;",
    "$('.btn').on('click', function (e) { e.preventDefault(); });",
    # JSON
    "{\"name\": \"GenieX\", \"version\": \"0.1.0\", \"private\": true}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi!\"},{\"role\":\"assistant\",\"content\":\"Hello.\"}]}",
    "[1, 2.5, -3e10, null, true, false, \"\\u00e9\\n\\t\"]",
    "{\"a\":{\"b\":{\"c\":{\"d\":[[],[{}],{\"e\":\"\"}]}}}}",
    "{\"emoji\": \"😀\", \"escaped\": \"\\ud83d\\ude00\", \"path\": \"C:\\\\Windows\\\\System32\"}",
    # HTML / XML / Markdown
    "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"></head></html>",
    "<div class=\"container\"><p>Hello <b>bold</b> and <i>italic</i> text.</p></div>",
    "<a href=\"https://example.com/path?q=1&amp;r=2\" target=\"_blank\">link</a>",
    "<table><tr><td>1</td><td>2</td></tr></table>",
    "<img src=\"cat.png\" alt=\"A cat\" width=\"640\" height=\"480\"/>",
    "<br><br/><hr><h1>Title</h1><h2>Sub</h2><ul><li>one</li><li>two</li></ul>",
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><root><item id=\"1\"/></root>",
    "<script>alert('x');</script><style>body{margin:0;padding:0}</style>",
    "&lt;tag&gt; &amp; &quot;quoted&quot; &#39;apos&#39; &nbsp; &#x1F600;",
    "# Heading 1",
    "## Heading 2 with `inline code`",
    "- [ ] todo item",
    "- [x] done item",
    "1. first  2. second  3. third",
    "**bold** __also bold__ *italic* _italic_ ~~strike~~",
    "```python",
    "```",
    "| col1 | col2 |",
    "|------|------|",
    "> quoted text in markdown",
    "![alt text](https://example.com/image.png \"Title\")",
    "[link](http://example.org) and <https://autolink.example>",
    # shell
    "#!/usr/bin/env bash",
    "set -euo pipefail",
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j\"$(nproc)\"",
    "ls -la /usr/local/bin | grep -E '^-.*x' | awk '{print $9}' | sort -u",
    "export PATH=\"$HOME/.local/bin:$PATH\"",
    "for f in *.gguf; do sha256sum \"$f\"; done > SHA256SUMS",
    "curl -fsSL https://example.com/install.sh | sh -s -- --yes",
    "echo $((1 + 2 * 3)) ${VAR:-default} ${#array[@]}",
    "find . -name '*.cpp' -print0 | xargs -0 clang-format -i",
    "git commit -m \"fix: handle empty input\" && git push origin main",
    "docker run --rm -it -v \"$PWD\":/work -w /work ubuntu:24.04 bash",
    # SQL / other
    "SELECT id, name FROM users WHERE age >= 18 AND country = 'DE' ORDER BY name LIMIT 10;",
    "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y') ON CONFLICT DO NOTHING;",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "func main() { fmt.Println(\"hello\") }",
    "public static void main(String[] args) { System.out.println(\"Hi\"); }",
    "x <- c(1, 2, 3); mean(x)",
    "\\begin{equation} E = mc^2 \\end{equation}",
    "$$\\int_0^\\infty e^{-x^2} dx = \\frac{\\sqrt{\\pi}}{2}$$",
    "key: value",
    "  nested:",
    "    - item: 1",
    "[section]",
    "name = \"value\" # comment",
    "0x7fffffff 0b1010 0o777 1e-9 3.14159f 1_000_000 0xDEADBEEF",
]

EMOJI = [
    "😀", "😃", "😄", "😁", "😆", "😂", "🤣", "😊", "🙂", "🙃", "😉", "😍", "🥰", "😘", "😎", "🤔",
    "😶\u200d🌫️", "🦙", "🚀", "✅", "❤️", "❤", "💔", "🔥", "✨", "🎉", "👍", "👎", "👏", "🙏",
    "👍🏻", "👍🏼", "👍🏽", "👍🏾", "👍🏿", "👋🏽", "🤝🏿",
    "👨\u200d👩\u200d👧\u200d👦", "👩\u200d💻", "👨\u200d🚀", "🏳️\u200d🌈", "🏳️\u200d⚧️", "👩🏽\u200d🔬",
    "🧑\u200d🤝\u200d🧑", "❤️\u200d🔥", "🐻\u200d❄️", "👁️\u200d🗨️",
    "🇺🇸", "🇩🇪", "🇫🇷", "🇯🇵", "🇨🇳", "🇧🇷", "🇮🇳", "🇺🇦", "🇪🇺", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "1️⃣", "#️⃣", "*️⃣", "©️", "®️", "™️", "☀️", "☁", "⭐", "🌍", "🌏", "🍕", "🍣", "☕", "🎵",
    "🐶", "🐱", "🦊", "🐼", "🐧", "🦄", "🌸", "🌲", "⚡", "💯", "🆗", "🈶", "🉐",
]

SYMBOLS = [
    "→ ← ↑ ↓ ⇒ ⇔ ∀ ∃ ∈ ∉ ∑ ∏ √ ∞ ≈ ≠ ≤ ≥ ± × ÷",
    "α β γ δ ε ζ η θ λ μ π σ φ ψ ω ℝ ℕ ℤ ℚ ℂ",
    "½ ¼ ¾ ⅓ ⅔ ⅛ ² ³ ¹ ⁰ ⁴ ₀ ₁ ₂ ₃",
    "ied 4 ½ months",
    "• · … — – ‒ ― ‘ ’ “ ” ‹ › « » „ ‚",
    "© ® ™ § ¶ † ‡ ° ′ ″ ‰ ‱",
    "★☆♠♣♥♦♪♫☺☻☼♀♂",
    "┌─┬─┐│ │ │├─┼─┤└─┴─┘",
    "█▓▒░▀▄▌▐■□▪▫",
    "ﬁ ﬂ ﬀ ﬃ ﬄ Ⅻ ⅻ ㎏ ㎞ ℃ ℉ №",
    "𝐀𝐁𝐂 𝒜ℬ𝒞 𝔄𝔅ℭ 𝕬𝕭𝕮 𝟎𝟏𝟐 𝓗𝓮𝓵𝓵𝓸",
    "ＡＢＣ　ａｂｃ　１２３　！？",
    "Ⓐ Ⓑ Ⓒ ① ② ③ ⑩ ⑳ ㊀ ㊁",
    "\u00a0non-breaking\u00a0spaces\u00a0here",
    "zero\u200bwidth\u200bspace and zero\u200cwidth\u200dnon-joiner",
    "soft\u00adhyphen and word\u2060joiner",
    "\ufeffBOM at start",
    "left-to-right \u200emark and right-to-left \u200fmark",
    "\u202eRLO override\u202c pop",
    "en\u2002space em\u2003space thin\u2009space hair\u200aspace ideographic\u3000space",
    "narrow\u202fno-break figure\u2007space punctuation\u2008space",
    "tab\tseparated\tvalues\there",
    "private use: \ue000\ue001\uf8ff",
    "replacement char: \ufffd and noncharacter-adjacent: \ufffc",
    "surrogate-plane chars: \U00010348 \U0001d11e \U0001f600 \U00020000 \U0002a6d6 \U0010fffd",
    "control-ish: \x01\x02\x07\x1b[31mred\x1b[0m",
    "NUL-free ASCII controls: \x08\x0e\x0f\x10\x1f\x7f",
]

COMBINING = [
    "e\u0301 (e + combining acute) vs é (precomposed)",
    "a\u0308 o\u0308 u\u0308 vs ä ö ü",
    "n\u0303 c\u0327 vs ñ ç",
    "Zalgo: Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034da\u0361\u036b\u0350\u0351\u0342\u0303\u031b\u0313\u0344\u033fl\u0307\u0300\u036e\u036f\u0369g\u0306\u0361o\u033f\u0301",
    "Vie\u0302\u0301t Nam",
    "Vieết Nam",
    "re\u0301sume\u0301",
    "résumé",
    "à" * 12,
    "a\u0300" * 12,
    "x\u0336s\u0336t\u0336r\u0336i\u0336k\u0336e\u0336",
    "u\u0332n\u0332d\u0332e\u0332r\u0332l\u0332i\u0332n\u0332e\u0332",
    "\u0301\u0301\u0301 leading combining marks",
    "Hangul jamo: \u1100\u1161\u11a8 vs 각",
    "Devanagari with nukta: क़ ख़ ग़ vs \u0915\u093c",
    "Thai with tone marks: ก่ ก้ ก๊ ก๋",
    "Arabic with harakat: بِسْمِ اللَّهِ",
    "Hebrew with niqqud: שָׁלוֹם",
    "Ångström (A + ring) vs A\u030angstro\u0308m",
    "ﬃ ligature vs ffi letters",
    "Ǆ ǅ ǆ Ǉ ǈ ǉ",
    "K (Kelvin sign) vs K; Ω (ohm) vs Ω (omega)",
    "İ ı I i — Turkish dotted and dotless",
    "ß ẞ ss SS",
    "ǰ ΐ ΰ",
]

SPECIAL_TOKEN_TEXT = [
    "<start_of_turn>user\nHello<end_of_turn>",  # replaced below: no newlines in lines
    "<start_of_turn>user",
    "<start_of_turn>model",
    "<end_of_turn>",
    "<bos>",
    "<eos>",
    "<pad>",
    "<unk>",
    "<mask>",
    "[multimodal]",
    "<start_of_image>",
    "<end_of_image>",
    "<bos><start_of_turn>user Hi<end_of_turn><start_of_turn>model",
    "<b>",
    "</b>",
    "<b>bold</b>",
    "<i>it</i><u>u</u><s>s</s>",
    "<h1>Header</h1>",
    "<br>",
    "<eos><eos><bos>",
    "text<end_of_turn>more text",
    " <start_of_turn> spaced <end_of_turn> ",
    "<start_of_turn><start_of_turn>",
    "<start_of_turn",
    "start_of_turn>",
    "<START_OF_TURN>",
    "< start_of_turn >",
    "<<start_of_turn>>",
    "<unused0>",
    "<unused99>",
    "<unused6241>",
    "<|im_start|>user",
    "<|im_end|>",
    "<|endoftext|>",
    "<s>",
    "</s>",
    "[INST] hi [/INST]",
    "<think>",
    "</think>",
    "<image_soft_token>",
    "<tool_call>",
    "<2mass>",
    "[@BOS@]",
    "<table><thead>",
    "<mask><pad><unk>",
]
SPECIAL_TOKEN_TEXT = [s.replace("\n", " ") for s in SPECIAL_TOKEN_TEXT]

URLS = [
    "https://www.example.com/",
    "http://example.org/path/to/page.html?query=1&lang=en#section-2",
    "https://en.wikipedia.org/wiki/Byte_pair_encoding",
    "ftp://files.example.net/pub/README.txt",
    "https://user:pass@host.example.com:8443/a/b;c?d=e&f=g%20h#frag",
    "mailto:someone@example.com",
    "john.doe+filter@sub.example.co.uk",
    "www.example.com/search?q=tokenizer+test",
    "https://例子.测试/路径?查询=值",
    "https://xn--fsqu00a.xn--0zwm56d/",
    "file:///C:/Users/Public/Documents/report.pdf",
    "/usr/local/lib/python3.11/site-packages/transformers/__init__.py",
    "C:\\Program Files\\GenieX\\models\\gemma-3-270m.gguf",
    "~/.cache/huggingface/hub/models--google--gemma-3-270m",
    "192.168.0.1:8080 10.0.0.255 [2001:db8::1]:443 ::1 127.0.0.1",
    "00:1A:2B:3C:4D:5E",
    "@username #hashtag $TICKER",
    "https://github.com/owner/repo/blob/main/src/file.cpp#L10-L20",
    "data:text/plain;base64,SGVsbG8sIFdvcmxkIQ==",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "550e8400-e29b-41d4-a716-446655440000",
]

PUNCT = [
    "!!!!!!", "??????", "?!?!?!", "......", "…", "---", "------======", "''''''", "```````", "\"\"\"\"",
    "((()))", "[[[]]]", "{{{}}}", "<<<>>>", "***", "###", "@@@", "$$$", "%%%", "^^^", "&&&", "|||",
    "~~~", "+++", "===", "___", ";;;", ":::", ",,,", "///", "\\\\\\", "!@#$%^&*()_+-=[]{}|;':\",./<>?",
    ":-) ;-) :-( :D XD <3 ¯\\_(ツ)_/¯ (╯°□°)╯︵ ┻━┻",
    "。、！？「」『』・ー～", "，。！？；：“”‘’（）【】", "؟ ، ؛", "। ॥", "¡¿",
    " (", "\n =".replace("\n", " "), "' era", " discards", "=>", "->", "::", "...", "--", "—",
]

# --------------------------------------------------------------------------------------------
# Generated material
# --------------------------------------------------------------------------------------------

def whitespace_lines(rng: random.Random) -> list[str]:
    out = [" ", "  ", "   ", "    ", "        ", "\t", "\t\t", " \t", "\t ", " \t \t ", "\u3000", "\u00a0",
           "   leading spaces", "trailing spaces   ", "\tleading tab", "trailing tab\t",
           "  both sides  ", "\t\tmixed \t whitespace\t \t", "a b  c   d    e     f      g",
           "word\tword\t\tword\t\t\tword", "    indented by four", "        indented by eight",
           "\t\tindented by two tabs", "  \t  mixed indent", " Hello", "  Hello", "   Hello",
           "Hello ", "Hello  ", " Hello ", "    Hello", "\tHello", "Hello\t", " ", "x" + " " * 40 + "y",
           " " * 17, "\t" * 9, "a\tb", "a \tb", "a\t b", "a \t b"]
    for _ in range(60):
        pieces = []
        for _ in range(rng.randint(1, 5)):
            ws = "".join(rng.choice([" ", " ", " ", "\t", "\u00a0", "\u3000"]) for _ in range(rng.randint(1, 6)))
            pieces.append(ws)
            pieces.append(rng.choice(["word", "Hello", "世界", "мир", "🦙", "x", "1", "(", ".", "<b>", "def"]))
        if rng.random() < 0.5:
            pieces.append(" " * rng.randint(1, 4))
        out.append("".join(pieces))
    return out


def number_lines(rng: random.Random) -> list[str]:
    out = ["3", "33", "333", "3333", "33333", "333333", "3333333", "33333333", "333333333",
           "3.3", "3..3", "3...3", "0", "00", "007", "0.000001", "-1", "+1", "1e10", "1E-10",
           "1,000,000", "1.000.000", "1 000 000", "1'000'000", "10^9", "2^64 = 18446744073709551616",
           "3.141592653589793238462643383279502884197169399375105820974944592307816406286",
           "2.718281828459045", "6.02214076e23", "1/3 ≈ 0.333…", "50%", "99.9%", "100 %",
           "#1", "No. 42", "v1.2.3", "v10.0.0-rc.1+build.5", "Python 3.11.7", "C++20", "x86_64", "arm64-v8a",
           "2026-03-01T12:34:56Z", "2026-03-01 12:34:56.789+01:00", "12/31/1999", "31.12.1999", "23:59:59",
           "ISBN 978-3-16-148410-0", "IBAN DE89 3704 0044 0532 0130 00", "4111 1111 1111 1111",
           "١٢٣ ٤٥٦", "०१२ ३४५", "一千二百三十四", "Ⅰ Ⅱ Ⅲ Ⅳ Ⅴ Ⅹ Ⅼ Ⅽ Ⅾ Ⅿ", "MMXXVI"]
    for _ in range(80):
        n = rng.randint(1, 40)
        s = "".join(rng.choice("0123456789") for _ in range(n))
        kind = rng.random()
        if kind < 0.25:
            s = s + "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 8)))
        elif kind < 0.4:
            s = "-" + s
        elif kind < 0.55:
            s = f"{rng.randint(0, 10**12):,}"
        elif kind < 0.7:
            s = f"{rng.choice(['The total is', 'Answer:', 'id=', 'port', 'x ='])} {s}"
        elif kind < 0.8:
            s = " ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(2, 8)))
        out.append(s)
    return out


def emoji_lines(rng: random.Random) -> list[str]:
    out = ["🦙🦙", " this is 🦙.cpp", "🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅",
           "👨\u200d👩\u200d👧\u200d👦 family", "flags: 🇺🇸🇩🇪🇫🇷🇯🇵", "skin tones: 👍🏻👍🏼👍🏽👍🏾👍🏿",
           "I ❤️ NY", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f England",
           "\U0001f1e6 lone regional indicator", "\u200d lone ZWJ", "️ lone VS16", "🏻 lone modifier"]
    for _ in range(110):
        k = rng.randint(1, 6)
        seq = [rng.choice(EMOJI) for _ in range(k)]
        sep = rng.choice(["", " ", "  ", ", "])
        s = sep.join(seq)
        r = rng.random()
        if r < 0.3:
            s = f"{rng.choice(ENGLISH)} {s}"
        elif r < 0.5:
            lang = rng.choice(sorted(LANGS))
            s = f"{s} {rng.choice(LANGS[lang])}"
        elif r < 0.6:
            s = s + rng.choice(["!", "!!!", "?", "...", ""])
        out.append(s)
    return out


def special_lines(rng: random.Random) -> list[str]:
    out = list(SPECIAL_TOKEN_TEXT)
    turns = ["user", "model", "system"]
    for _ in range(80):
        role = rng.choice(turns)
        msg = rng.choice(ENGLISH + [rng.choice(v) for v in LANGS.values()])
        shape = rng.random()
        if shape < 0.3:
            s = f"<start_of_turn>{role} {msg}<end_of_turn>"
        elif shape < 0.5:
            s = f"<bos><start_of_turn>{role}{rng.choice([' ', '', '  '])}{msg}<end_of_turn><start_of_turn>model"
        elif shape < 0.65:
            tag = rng.choice(["b", "i", "u", "s", "em", "strong", "code", "p", "div", "span", "h1", "h2", "li", "td"])
            s = f"<{tag}>{msg}</{tag}>"
        elif shape < 0.8:
            tok = rng.choice(["<pad>", "<unk>", "<mask>", "<bos>", "<eos>", "[multimodal]", "<start_of_image>",
                              "<end_of_image>", "<end_of_turn>", "<start_of_turn>"])
            words = msg.split(" ")
            pos = rng.randint(0, len(words))
            words.insert(pos, tok)
            s = " ".join(words)
        else:
            toks = [rng.choice(SPECIAL_TOKEN_TEXT) for _ in range(rng.randint(2, 4))]
            s = rng.choice(["", " ", "x"]).join(toks)
        out.append(s)
    return out


def mixed_lines(rng: random.Random, n: int) -> list[str]:
    pools = {
        "en": ENGLISH,
        "lang": [s for v in LANGS.values() for s in v],
        "code": CODE,
        "emoji": EMOJI,
        "sym": SYMBOLS,
        "comb": COMBINING,
        "url": URLS,
        "punct": PUNCT,
        "special": SPECIAL_TOKEN_TEXT,
    }
    names = sorted(pools)
    weights = {"en": 3, "lang": 6, "code": 3, "emoji": 2, "sym": 1, "comb": 1, "url": 1, "punct": 1, "special": 1}
    wl = [weights[k] for k in names]
    out = []
    for _ in range(n):
        k = rng.choice([1, 2, 2, 2, 3, 3, 4])
        parts = [rng.choice(pools[rng.choices(names, wl)[0]]) for _ in range(k)]
        seps = [rng.choice([" ", " ", " ", "", "  ", "\t", " | ", ", ", " — ", ": "]) for _ in range(k - 1)]
        s = parts[0]
        for sep, p in zip(seps, parts[1:]):
            s += sep + p
        r = rng.random()
        if r < 0.08:
            s = " " + s
        elif r < 0.12:
            s = s + " "
        elif r < 0.15:
            s = "\t" + s
        elif r < 0.2:
            s = s.upper()
        elif r < 0.25:
            s = s.lower()
        elif r < 0.28:
            s = unicodedata.normalize("NFD", s)
        out.append(s)
    return out


def multiline_cases() -> list[str]:
    """Cases containing line breaks; stored only in the goldens JSON."""
    return [
        "\n",
        "\n\n",
        "\n\n\n",
        "\t\n",
        " \n ",
        "\r\n",
        "line one\nline two",
        "line one\r\nline two\r\n",
        "Hello\n\n\nworld",
        "   Hello\n    Hello",
        "\n =",
        "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
        "<bos><start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\nHello! How can I help?<end_of_turn>\n",
        "def f(x):\n    return x + 1\n",
        "int main() {\n\treturn 0;\n}\n",
        "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}",
        "# Title\n\nSome *markdown* text.\n\n- item 1\n- item 2\n",
        "```python\nprint('hi')\n```",
        "first\n\tsecond\n\t\tthird",
        "trailing spaces   \n   leading spaces",
        "😀\n🇩🇪\n👨\u200d👩\u200d👧",
        "日本語\n中文\n한국어",
        "a\vb\fc",
        "unicode line sep:\u2028paragraph sep:\u2029next line:\u0085end",
        "\n\n\n\n\n\n\n\n\n\n",
        " \n \n \n",
        "\r\r\n\n\r",
        "x\n",
        "\ny",
        "Roses are red,\nViolets are blue,\nTokenizers are tricky,\nAnd so are you.",
    ]


def build_corpus(seed: int) -> list[str]:
    rng = random.Random(seed)
    lines: list[str] = []
    lines += ENGLISH
    for lang in sorted(LANGS):
        lines += LANGS[lang]
    lines += CODE
    lines += SYMBOLS
    lines += COMBINING
    lines += URLS
    lines += PUNCT
    lines += whitespace_lines(rng)
    lines += number_lines(rng)
    lines += emoji_lines(rng)
    lines += special_lines(rng)
    # NFD / NFC variants of all natural-language lines (tests normalisation differences)
    for lang in sorted(LANGS):
        for s in LANGS[lang]:
            d = unicodedata.normalize("NFD", s)
            if d != s:
                lines.append(d)
    # case variants
    for s in ENGLISH[:25]:
        lines.append(s.upper())
        lines.append(s.lower())
        lines.append(" " + s)
    # long lines: paragraphs of many sentences
    all_sent = ENGLISH + [s for v in LANGS.values() for s in v]
    for _ in range(40):
        lines.append(" ".join(rng.choice(all_sent) for _ in range(rng.randint(5, 25))))
    for _ in range(10):
        lines.append(" ".join(rng.choice(CODE).strip() for _ in range(rng.randint(4, 12))))
    lines.append("a" * 500)
    lines.append(" " * 300)
    lines.append("ab" * 200)
    lines.append("🦙" * 64)
    lines.append("の" * 100)
    lines.append("1234567890" * 30)
    # fill the rest with random combinations
    lines += mixed_lines(rng, max(0, MIN_LINES + 400 - len(lines)))

    # sanitise: no line breaks, no empty lines, no duplicates (keep first occurrence)
    seen = set()
    out = []
    for s in lines:
        assert not (set(s) & BAD_CHARS), repr(s)
        if not s or s in seen:
            continue
        seen.add(s)
        out.append(s)
    assert len(out) >= MIN_LINES, len(out)
    return out


def main() -> int:
    here = Path(__file__).resolve()
    default_out = here.parents[2] / "tests" / "data" / "tokenizer" / "gemma3_corpus.txt"
    ap = argparse.ArgumentParser(description="Generate the deterministic tokenizer corpus.")
    ap.add_argument("--out", type=Path, default=default_out)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    lines = build_corpus(args.seed)
    data = "".join(s + "\n" for s in lines).encode("utf-8")
    args.out.write_bytes(data)
    print(f"wrote {args.out}: {len(lines)} lines, {len(data)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
