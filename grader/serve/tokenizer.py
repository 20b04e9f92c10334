"""Text in, text out: the tokenizer a served model uses.

- A preset model (``--model tiny`` and the others of ``realdevice.config.MODELS``, random
  weights) uses ``ByteTokenizer``: a prompt's UTF-8 bytes are its token ids (0-255), and an
  output id below 256 is that byte. It needs a vocabulary of at least 256 ids (the tiny
  preset has exactly 256); an output id of 256 or more (larger presets) has no byte and is
  written as U+FFFD. Nothing is downloaded or built: the tokenizer is the byte encoding.
- A Hugging Face checkpoint folder (``--model PATH``) uses its own tokenizer files through
  the ``transformers`` package (``AutoTokenizer``, local files only); without it, serving a
  checkpoint stops with one sentence saying what to install.

``decoder()`` gives one request's incremental decoder: ``piece(token_id)`` returns the text
that token completes (a multi-byte character split across tokens appears when it is whole).
"""

from __future__ import annotations

import codecs
from pathlib import Path

BYTES = 256
REPLACEMENT = "\ufffd"


class TokenizerError(ValueError):
    """A model whose tokenizer cannot be used (the message says why)."""


class ByteTokenizer:
    name = "bytes"

    def __init__(self, vocab: int):
        if vocab < BYTES:
            raise TokenizerError(f"a byte tokenizer needs a vocabulary of >= {BYTES}, not {vocab}")

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def chat(self, messages: list[dict]) -> str:
        return plain_chat(messages)

    def decoder(self):
        return _ByteDecoder()


class _ByteDecoder:
    def __init__(self):
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def piece(self, token: int) -> str:
        if token >= BYTES:
            return self._utf8.decode(b"", final=True) + REPLACEMENT
        return self._utf8.decode(bytes([token]))


class HFTokenizer:
    name = "huggingface"

    def __init__(self, folder: Path):
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise TokenizerError(
                f"--model {folder}: serving a checkpoint needs the `transformers` package for "
                "its tokenizer (pip install transformers)"
            ) from None
        try:
            self._tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise TokenizerError(f"--model {folder}: no usable tokenizer ({exc})") from None

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text))

    def chat(self, messages: list[dict]) -> str:
        if getattr(self._tok, "chat_template", None):
            return self._tok.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        return plain_chat(messages)

    def decoder(self):
        return _HFDecoder(self._tok)


class _HFDecoder:
    """Decodes all ids so far and returns what is new (a token may change earlier text's
    spacing; a trailing U+FFFD waits for the rest of its character)."""

    def __init__(self, tok):
        self._tok, self._ids, self._sent = tok, [], 0

    def piece(self, token: int) -> str:
        self._ids.append(token)
        text = self._tok.decode(self._ids, skip_special_tokens=True)
        if text.endswith(REPLACEMENT):
            return ""
        new, self._sent = text[self._sent :], len(text)
        return new


def plain_chat(messages: list[dict]) -> str:
    """A chat as plain text: one ``role: content`` line per message, then ``assistant:``."""
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join([*lines, "assistant:"])


def for_model(model: str, vocab: int):
    """The tokenizer of ``--model`` (a preset name or a checkpoint folder)."""
    from realdevice.config import MODELS

    if model in MODELS:
        return ByteTokenizer(vocab)
    return HFTokenizer(Path(model))


def save_byte_tokenizer(folder: Path) -> None:
    """Write a Hugging Face tokenizer folder that encodes exactly as ``ByteTokenizer`` (id =
    byte), for clients that count tokens themselves (GuideLLM's ``--tokenizer``). Needs the
    ``tokenizers`` and ``transformers`` packages; GPT-2's byte-to-character table stands for
    the bytes, with no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {b: chr(b) for b in printable}, 0
    for b in range(BYTES):
        if b not in table:
            table[b], extra = chr(BYTES + extra), extra + 1
    tok = Tokenizer(models.BPE(vocab={table[b]: b for b in range(BYTES)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(str(folder))
