#!/usr/bin/python3
"""Checks docs/openapi.yaml and real responses against it (tests/integration/openapi_test.cpp).

  openapi_check.py SPEC lint        the document itself: OpenAPI 3.1, every operation has
                                    responses, every $ref resolves, every schema is a valid
                                    JSON Schema 2020-12, path parameters are declared, security
                                    schemes exist; prints "ok" or one problem a line, exit 1.
  openapi_check.py SPEC operations  "METHOD /path/{template}" per documented operation, sorted.
  openapi_check.py SPEC validate    one JSON object a line on stdin, {"method", "path" (concrete,
                                    query allowed), "status", "content_type", "body" (text)};
                                    one line out for each: "ok" or "error: <why>".

Uses Debian's python3-jsonschema (4.10, Draft 2020-12, which OpenAPI 3.1 uses) and python3-yaml;
run it with /usr/bin/python3 so a python on PATH without them does not shadow it.
"""
import json
import re
import sys

import jsonschema
import yaml

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def resolve_pointer(doc, ref):
    if not ref.startswith("#/"):
        raise KeyError("only local references are used here: " + ref)
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise KeyError("unresolved $ref " + ref)
        node = node[part]
    return node


def deref(doc, node):
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        node = resolve_pointer(doc, node["$ref"])
        seen += 1
    return node


def operations(doc):
    for path, item in (doc.get("paths") or {}).items():
        for method in METHODS:
            if isinstance(item, dict) and method in item:
                yield method.upper(), path, item[method]


def lint(doc):
    problems = []
    if not str(doc.get("openapi", "")).startswith("3.1."):
        problems.append("openapi must be 3.1.x, is %r" % doc.get("openapi"))
    info = doc.get("info") or {}
    for k in ("title", "version"):
        if not info.get(k):
            problems.append("info.%s is missing" % k)

    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node and isinstance(node["$ref"], str):
                try:
                    resolve_pointer(doc, node["$ref"])
                except KeyError as e:
                    problems.append("%s: %s" % (where, e.args[0]))
            for k, v in node.items():
                walk(v, where + "/" + str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s/%d" % (where, i))

    walk(doc, "#")

    schemes = set(((doc.get("components") or {}).get("securitySchemes") or {}).keys())
    op_ids = {}
    if not doc.get("paths"):
        problems.append("no paths")
    for path, item in (doc.get("paths") or {}).items():
        if not path.startswith("/"):
            problems.append("path %s does not start with /" % path)
        ops = [m for m in METHODS if m in item]
        if not ops:
            problems.append("%s has no operation" % path)
        templated = set(re.findall(r"\{([^}/]+)\}", path))
        for m in ops:
            op = item[m]
            where = "%s %s" % (m.upper(), path)
            responses = op.get("responses") or {}
            if not responses:
                problems.append(where + ": no responses")
            for code in responses:
                if not (str(code) == "default" or re.fullmatch(r"[1-5](XX|[0-9]{2})", str(code))):
                    problems.append("%s: response key %r is not a status" % (where, code))
                if not isinstance(code, str):
                    problems.append("%s: response key %r must be quoted" % (where, code))
            oid = op.get("operationId")
            if oid:
                if oid in op_ids:
                    problems.append("%s: operationId %s also on %s" % (where, oid, op_ids[oid]))
                op_ids[oid] = where
            declared = set()
            for p in (item.get("parameters") or []) + (op.get("parameters") or []):
                try:
                    p = deref(doc, p)
                except KeyError:
                    continue
                if p.get("in") == "path":
                    declared.add(p.get("name"))
                    if p.get("required") is not True:
                        problems.append("%s: path parameter %s must be required" % (where, p.get("name")))
            for name in templated - declared:
                problems.append("%s: path parameter {%s} is not declared" % (where, name))
            for name in declared - templated:
                problems.append("%s: parameter %s is not in the path" % (where, name))
            for req in op.get("security", doc.get("security") or []):
                for name in req:
                    if name not in schemes:
                        problems.append("%s: unknown security scheme %s" % (where, name))

    for name, schema in ((doc.get("components") or {}).get("schemas") or {}).items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            problems.append("components/schemas/%s: %s" % (name, e.message))
    return problems


def find_operation(doc, method, path):
    """The operation of `method` on the documented path that `path` (concrete or a template)
    is, preferring literal segments over templated ones; (template, operation) or None."""
    path = path.split("?", 1)[0]
    segments = path.split("/")
    best = None
    for tmethod, template, op in operations(doc):
        if tmethod != method.upper():
            continue
        tsegments = template.split("/")
        if len(tsegments) != len(segments):
            continue
        score = 0
        for t, s in zip(tsegments, segments):
            if t == s:
                score += 2
            elif re.fullmatch(r"\{[^}/]+\}", t) and s:
                score += 1
            else:
                score = -1
                break
        if score >= 0 and (best is None or score > best[0]):
            best = (score, template, op)
    return None if best is None else (best[1], best[2])


def validate(doc, method, path, status, content_type, body):
    found = find_operation(doc, method, path)
    if not found:
        # A method the path does not have: 405 with the error body, as the document says.
        other = next((find_operation(doc, m, path) for m in METHODS if find_operation(doc, m, path)), None)
        if not other or str(status) != "405":
            return "no documented operation %s %s" % (method, path)
        found = (other[0], {"responses": {"405": {"$ref": "#/components/responses/MethodNotAllowed"}}})
    template, op = found
    responses = op.get("responses") or {}
    key = str(status)
    if key not in responses:
        key = key[0] + "XX"
    if key not in responses:
        key = "default"
    if key not in responses:
        return "%s %s: status %s is not documented" % (method, template, status)
    response = deref(doc, responses[key])
    content = response.get("content")
    if not content:
        return None
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in content:
        return "%s %s %s: content type %r is not one of %s" % (method, template, status, media, sorted(content))
    schema = content[media].get("schema")
    if schema is None:
        return None
    if media == "application/json" or media.endswith("+json"):
        try:
            instance = json.loads(body)
        except ValueError as e:
            return "%s %s %s: the body is not JSON: %s" % (method, template, status, e)
    else:
        instance = body
    resolver = jsonschema.RefResolver(base_uri="", referrer=doc)
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.absolute_path) or "(root)"
        return "%s %s %s: at %s: %s" % (method, template, status, at, e.message)
    return None


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    doc = load(argv[1])
    if argv[2] == "lint":
        problems = lint(doc)
        print("\n".join(problems) if problems else "ok")
        return 1 if problems else 0
    if argv[2] == "operations":
        for method, path in sorted((m, p) for m, p, _ in operations(doc)):
            print(method, path)
        return 0
    if argv[2] == "validate":
        failed = False
        for line in sys.stdin:
            if not line.strip():
                continue
            r = json.loads(line)
            why = validate(doc, r["method"], r["path"], r["status"], r.get("content_type", ""), r.get("body", ""))
            failed = failed or why is not None
            print("ok" if why is None else "error: " + why.replace("\n", " "))
        return 1 if failed else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
