"""The two platforms' published encryption schemes, both AES-256-CBC with PKCS#7 padding, and
their signatures; pure functions over bytes and strings (the `cryptography` package does AES).

Feishu/Lark: the key is SHA-256 of the Encrypt Key, the first 16 bytes of the base64 text are
the IV; the signature header is SHA-256 hex of timestamp + nonce + Encrypt Key + body.
WeCom: the key is the base64 EncodingAESKey (43 characters, "=" added), the IV its first 16
bytes, the padding to 32 bytes; the plain text is 16 random bytes, the message's length (4 bytes,
network order), the message and the CorpID; `msg_signature` is SHA-1 hex of the token,
timestamp, nonce and the encrypted text, sorted and joined.

    feishu_signature("1700000000", "n", "key", b"{}") -> "5d0c..."
    wecom_signature("token", "1700000000", "n", "ENC") -> "a1b2..."
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ui.api.channels.base import Refused


def _cbc_decrypt(key: bytes, iv: bytes, data: bytes, block: int) -> bytes:
    """AES-CBC of `data` undone and its PKCS#7 padding (to `block` bytes) taken off; Refused
    when it does not decrypt to a padded text."""
    if not data or len(data) % 16:
        raise Refused("decrypt", "the encrypted text is not whole AES blocks")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    plain = decryptor.update(data) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= block or plain[-pad:] != bytes([pad]) * pad:
        raise Refused("decrypt", "the encrypted text does not decrypt with the configured key")
    return plain[:-pad]


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Refused("decrypt", "the encrypted text is not base64") from None


def feishu_decrypt(encrypt_key: str, text: str) -> bytes:
    """Feishu's `{"encrypt": text}` back to the event's JSON bytes."""
    data = _b64(text)
    key = hashlib.sha256(encrypt_key.encode()).digest()
    return _cbc_decrypt(key, data[:16], data[16:], 16)


def feishu_signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    """The `X-Lark-Signature` of a callback."""
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def wecom_key(aes_key: str) -> bytes:
    """The 32-byte key of a 43-character EncodingAESKey; ValueError when it is not one."""
    try:
        key = base64.b64decode(aes_key + "=", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise ValueError("KB_WECOM_AES_KEY is not the 43-character EncodingAESKey of the app's "
                         "callback settings")
    return key


def wecom_decrypt(key: bytes, text: str, corp_id: str) -> str:
    """WeCom's encrypted text back to the message, checked to be for `corp_id`."""
    plain = _cbc_decrypt(key, key[:16], _b64(text), 32)
    if len(plain) < 20:
        raise Refused("decrypt", "the decrypted text is too short")
    (length,) = struct.unpack(">I", plain[16:20])
    message, receiver = plain[20:20 + length], plain[20 + length:]
    if len(message) != length or not hmac.compare_digest(receiver, corp_id.encode()):
        raise Refused("corp", "the message is not for channels.wecom.corp_id")
    return message.decode("utf-8", errors="replace")


def wecom_signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    """WeCom's `msg_signature` of an encrypted text."""
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()
