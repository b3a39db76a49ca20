"""CloudEvents over HTTP (binding 1.0): structured, batched and binary mode → event dicts.

Every event comes out in the structured form (attributes and ``data`` as keys of one dict),
whatever mode it arrived in, so the mapping sees one shape. Malformed input raises
:class:`EventError` naming what is wrong; the receiver answers it with a 400.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from tms_client.event_fields import EventError

STRUCTURED_MEDIA = "application/cloudevents+json"
BATCH_MEDIA = "application/cloudevents-batch+json"
BINARY_HEADER_PREFIX = "ce-"
JSON_MEDIA = ("application/json", "text/json")


@dataclass(frozen=True)
class ParsedRequest:
    events: list[dict[str, Any]]
    batched: bool


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json_media(media: str) -> bool:
    return media in JSON_MEDIA or media.endswith("+json")


def _json(body: bytes, field: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise EventError(field, f"not valid JSON: {str(e)[:120]}") from None


def _structured(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EventError(field, "expected a JSON object (a CloudEvent)")
    if "data_base64" in value and "data" not in value:
        raw = value.pop("data_base64")
        try:
            decoded = base64.b64decode(str(raw), validate=True)
        except (binascii.Error, ValueError):
            raise EventError(f"{field}.data_base64" if field else "data_base64",
                             "not valid base64") from None
        if is_json_media(media_type(value.get("datacontenttype")) or "application/json"):
            value["data"] = _json(decoded, f"{field}.data" if field else "data")
        else:
            value["data"] = decoded
    return value


def _binary(headers: Mapping[str, str], content_type: str | None, body: bytes
            ) -> dict[str, Any]:
    event: dict[str, Any] = {
        name[len(BINARY_HEADER_PREFIX):]: unquote(value)
        for name, value in headers.items() if name.startswith(BINARY_HEADER_PREFIX)
    }
    if content_type:
        event["datacontenttype"] = content_type
    if body:
        if not is_json_media(media_type(content_type)):
            raise EventError("data", "binary-mode data must be JSON (Content-Type "
                                     f"application/json), got {media_type(content_type)!r}")
        event["data"] = _json(body, "data")
    return event


def parse_request(headers: Mapping[str, str], body: bytes) -> ParsedRequest:
    """Events of one HTTP request; ``headers`` with lower-case names."""
    content_type = headers.get("content-type")
    media = media_type(content_type)
    if media == BATCH_MEDIA:
        batch = _json(body, "")
        if not isinstance(batch, list):
            raise EventError("", "a batch must be a JSON array of CloudEvents")
        return ParsedRequest([_structured(e, f"events[{i}]") for i, e in enumerate(batch)],
                             batched=True)
    if media == STRUCTURED_MEDIA:
        return ParsedRequest([_structured(_json(body, ""), "")], batched=False)
    if f"{BINARY_HEADER_PREFIX}specversion" in headers:
        return ParsedRequest([_binary(headers, content_type, body)], batched=False)
    raise EventError("content-type", f"{media or 'none'!r} is not a CloudEvent: send "
                     f"{STRUCTURED_MEDIA}, {BATCH_MEDIA}, or binary mode (ce-specversion, "
                     "ce-id, ce-source and ce-type headers)")
