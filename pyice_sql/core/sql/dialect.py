"""PyIceSpark: sqlglot's Spark dialect, extended with the Iceberg SQL extensions Spark understands.

sqlglot's Spark dialect parses most of Spark SQL, but it falls back to an opaque `Command` (or
fails) for the Iceberg extensions and a few Spark statements this project must understand:
CALL, EXPLAIN, SHOW NAMESPACES/TABLES, ALTER TABLE ... UNSET TBLPROPERTIES, the partition
field actions, ALTER COLUMN on nested fields, CREATE NAMESPACE with COMMENT/LOCATION/properties,
`FOR SYSTEM_VERSION AS OF`, `MERGE WITH SCHEMA EVOLUTION`, and it is lax about the shape of MERGE
clauses. The extensions here produce small expression classes defined below; everything else is
sqlglot's own tree. The same dialect writes parsed expressions back as Spark SQL (its Generator
corrects what sqlglot's Spark writer would change).
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import groupconcat_sql
from sqlglot.dialects.spark import Spark
from sqlglot.generator import Generator as BaseGenerator
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType
from sqlglot.trie import new_trie


class CallProcedure(exp.Expression):
    """CALL name(args): `this` is the name as a list of identifiers, args may be exp.Kwarg."""

    arg_types = {"this": True, "expressions": False}


class ExplainStatement(exp.Expression):
    """EXPLAIN [mode] statement."""

    arg_types = {"this": True, "mode": False}


class ShowObjects(exp.Expression):
    """SHOW NAMESPACES|DATABASES|SCHEMAS|TABLES [IN|FROM name] [[LIKE] 'pattern']."""

    arg_types = {"this": True, "parent": False, "pattern": False}


class UnsetTableProperties(exp.Expression):
    """ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)."""

    arg_types = {"expressions": True, "exists": False}


class AddPartitionField(exp.Expression):
    """ALTER TABLE t ADD PARTITION FIELD term [AS name]."""

    arg_types = {"this": True, "alias": False}


class DropPartitionField(exp.Expression):
    """ALTER TABLE t DROP PARTITION FIELD term (a transform term or a partition field name)."""

    arg_types = {"this": True}


class ReplacePartitionField(exp.Expression):
    """ALTER TABLE t REPLACE PARTITION FIELD old WITH new [AS name]."""

    arg_types = {"this": True, "expression": True, "alias": False}


class RefAction(exp.Expression):
    """ALTER TABLE t CREATE [OR REPLACE] | REPLACE BRANCH|TAG name [IF NOT EXISTS] [AS OF VERSION n]
    [RETAIN n unit] [WITH SNAPSHOT RETENTION [n SNAPSHOTS] [n unit]]: `kind` is BRANCH or TAG;
    `retain` and `max_snapshot_age` are (number, unit) tuples, `min_snapshots` a number."""

    arg_types = {"this": True, "kind": True, "create": False, "replace": False, "exists": False,
                 "snapshot_id": False, "retain": False, "min_snapshots": False, "max_snapshot_age": False}


class DropRef(exp.Expression):
    """ALTER TABLE t DROP BRANCH|TAG [IF EXISTS] name."""

    arg_types = {"this": True, "kind": True, "exists": False}


class IdentifierFields(exp.Expression):
    """ALTER TABLE t SET | DROP IDENTIFIER FIELDS a, b.c (Iceberg's Spark extensions)."""

    arg_types = {"expressions": True, "drop": False}


class AlterColumnAction(exp.Expression):
    """ALTER TABLE t ALTER [COLUMN] path (TYPE t | COMMENT 'c' | SET/DROP NOT NULL | SET DEFAULT v |
    DROP DEFAULT | FIRST | AFTER c); `default` is the new value, `drop_default` True for DROP DEFAULT."""

    arg_types = {"this": True, "dtype": False, "comment": False, "not_null": False, "position": False,
                 "default": False, "drop_default": False}


# set on an exp.Merge parsed from `MERGE WITH SCHEMA EVOLUTION INTO`
SCHEMA_EVOLUTION_META = "pyice_schema_evolution"
_NAMESPACE_WORDS = ("DATABASE", "SCHEMA", "NAMESPACE")
_REF_KINDS = ("BRANCH", "TAG")
_TIME_UNITS = ("DAYS", "HOURS", "MINUTES")
_EXPLAIN_MODES = ("EXTENDED", "CODEGEN", "COST", "FORMATTED")


class PyIceSparkParser(SparkParser):
    """Spark's parser plus the statements listed in the module docstring."""

    STATEMENT_PARSERS = {
        **SparkParser.STATEMENT_PARSERS,
        TokenType.SHOW: lambda self: self._parse_show(),
    }

    SHOW_PARSERS = {
        **SparkParser.SHOW_PARSERS,
        "DATABASES": lambda self: self._parse_show_objects("NAMESPACES"),
        "SCHEMAS": lambda self: self._parse_show_objects("NAMESPACES"),
        "NAMESPACES": lambda self: self._parse_show_objects("NAMESPACES"),
        "TABLES": lambda self: self._parse_show_objects("TABLES"),
    }
    SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)

    ALTER_PARSERS = {
        **SparkParser.ALTER_PARSERS,
        "ADD": lambda self: self._parse_partition_field_action("ADD")
        or self._parse_alter_table_add(),
        "DROP": lambda self: self._parse_drop_ref()
        or self._parse_identifier_fields(drop=True)
        or self._parse_partition_field_action("DROP")
        or self._parse_alter_table_drop(),
        "REPLACE": lambda self: self._parse_ref_action(create=False)
        or self._parse_partition_field_action("REPLACE")
        or self._parse_alter_table_replace_columns(),
        "CREATE": lambda self: self._parse_create_ref(),
        "UNSET": lambda self: self._parse_unset_properties(),
        "SET": lambda self: self._parse_identifier_fields(drop=False)
        or SparkParser.ALTER_PARSERS["SET"](self),
    }

    VERSION_PHRASES = {
        **SparkParser.VERSION_PHRASES,
        ("FOR", "SYSTEM_VERSION"): "VERSION",
    }

    def _parse_statement(self) -> exp.Expr | None:
        # CALL and EXPLAIN are tokenized as plain words (see PyIceSpark.Tokenizer) so the
        # tokenizer does not swallow the rest of the statement into one opaque string.
        if self._curr and self._curr.token_type == TokenType.VAR and self._next:
            word = self._curr.text.upper()
            if word == "CALL":
                self._advance()
                return self._parse_call()
            if word == "EXPLAIN":
                self._advance()
                return self._parse_explain()
        return super()._parse_statement()

    def _warn_unsupported(self) -> None:
        # A Command is an ordinary outcome here (it is passed to Spark unchanged), not a warning.
        return None

    def _parse_name_parts(self) -> list[exp.Identifier]:
        """A dotted multi-part name, one identifier per part."""
        parts: list[exp.Identifier] = []
        while True:
            part = self._parse_id_var(any_token=True)
            if not isinstance(part, exp.Identifier):
                self.raise_error("Expecting a name")
                return parts
            parts.append(part)
            if not self._match(TokenType.DOT):
                return parts

    def _parse_call(self) -> CallProcedure:
        name = self._parse_name_parts()
        args = self._parse_wrapped_csv(self._parse_lambda)
        return self.expression(CallProcedure(this=exp.Tuple(expressions=name), expressions=args))

    def _parse_explain(self) -> ExplainStatement:
        mode = self._prev.text.upper() if self._match_texts(_EXPLAIN_MODES) else None
        inner = self._parse_statement()
        if inner is None:
            self.raise_error("Expecting a statement after EXPLAIN")
        return self.expression(ExplainStatement(this=inner, mode=mode))

    def _parse_show_objects(self, kind: str) -> ShowObjects:
        parent = None
        if self._match_set((TokenType.IN, TokenType.FROM)):
            parent = exp.Tuple(expressions=self._parse_name_parts())
        self._match(TokenType.LIKE)
        pattern = self._parse_string()
        return self.expression(ShowObjects(this=exp.var(kind), parent=parent, pattern=pattern))

    def _parse_create(self) -> exp.Create | exp.Command:
        if self._curr and self._curr.text.upper() in _NAMESPACE_WORDS:
            return self._parse_create_namespace()
        return super()._parse_create()

    def _parse_create_namespace(self) -> exp.Create:
        """CREATE DATABASE|SCHEMA|NAMESPACE [IF NOT EXISTS] name [COMMENT c] [LOCATION l]
        [WITH DBPROPERTIES|PROPERTIES (k=v, ...)], clauses in any order."""
        kind = self._curr.text.upper()
        self._advance()
        exists = self._parse_exists(not_=True)
        name = self._parse_table_parts(schema=True)
        props: list[exp.Expr] = []
        while self._curr:
            if self._match(TokenType.COMMENT):
                props.append(exp.Property(this=exp.Literal.string("comment"), value=self._parse_string()))
            elif self._match_text_seq("LOCATION"):
                props.append(exp.Property(this=exp.Literal.string("location"), value=self._parse_string()))
            elif self._match_text_seq("WITH", "DBPROPERTIES") or self._match_text_seq("WITH", "PROPERTIES"):
                props.extend(self._parse_wrapped_csv(self._parse_property))
            else:
                self.raise_error("Expecting COMMENT, LOCATION or WITH DBPROPERTIES")
                break
        return self.expression(
            exp.Create(this=name, kind=kind, exists=exists,
                       properties=exp.Properties(expressions=props) if props else None)
        )

    def _parse_unset_properties(self) -> UnsetTableProperties | None:
        if not self._match_text_seq("TBLPROPERTIES"):
            return None
        exists = self._parse_exists()
        keys = self._parse_wrapped_csv(lambda: self._parse_string() or self._parse_column())
        return self.expression(UnsetTableProperties(expressions=keys, exists=exists))

    def _parse_partition_field_action(self, action: str) -> exp.Expr | None:
        if not self._match_text_seq("PARTITION", "FIELD"):
            return None
        term = self._parse_partition_term()
        if action == "DROP":
            return self.expression(DropPartitionField(this=term))
        if action == "REPLACE":
            if not self._match(TokenType.WITH):
                self.raise_error("Expecting WITH")
            new = self._parse_partition_term()
            return self.expression(ReplacePartitionField(this=term, expression=new, alias=self._parse_field_alias()))
        return self.expression(AddPartitionField(this=term, alias=self._parse_field_alias()))

    def _parse_field_alias(self) -> exp.Expr | None:
        if not self._match(TokenType.ALIAS):
            return None
        alias = self._parse_id_var(any_token=True)
        if alias is None:
            self.raise_error("Expecting a partition field name after AS")
        return alias

    def _parse_partition_term(self) -> exp.Expr:
        """A column path, or transform(args) whose args are numbers or column paths."""
        index = self._index
        name = self._parse_id_var(any_token=True)
        if isinstance(name, exp.Identifier) and self._match(TokenType.L_PAREN):
            args = self._parse_csv(lambda: self._parse_number() or self._parse_column())
            self._match_r_paren()
            return self.expression(exp.Anonymous(this=name.name, expressions=args))
        self._retreat(index)
        column = self._parse_column()
        if column is None:
            self.raise_error("Expecting a partition transform or column")
        return column  # type: ignore[return-value]

    def _parse_create_ref(self) -> RefAction:
        """After ALTER TABLE t CREATE: `OR REPLACE BRANCH|TAG ...` or `BRANCH|TAG [IF NOT EXISTS] ...`."""
        if self._match(TokenType.OR):
            if not self._match(TokenType.REPLACE):
                self.raise_error("Expecting REPLACE")
            action = self._parse_ref_action(create=True)
        else:
            action = self._parse_ref_action(create=True, replace=False)
        if action is None:
            self.raise_error("Expecting BRANCH or TAG")
        return action  # type: ignore[return-value]

    def _parse_ref_action(self, create: bool, replace: bool = True) -> RefAction | None:
        if not self._match_texts(_REF_KINDS):
            return None
        kind = self._prev.text.upper()
        exists = not replace and self._parse_exists(not_=True)
        name = self._parse_id_var(any_token=True)
        if name is None:
            self.raise_error(f"Expecting a {kind.lower()} name")
        args: dict[str, object] = {"this": name, "kind": kind, "create": create, "replace": replace,
                                   "exists": bool(exists)}
        if self._match_text_seq("AS", "OF", "VERSION"):
            args["snapshot_id"] = self._parse_ref_number()
        if self._match_text_seq("RETAIN"):
            args["retain"] = (self._parse_ref_number(), self._parse_time_unit())
        if kind == "BRANCH" and self._match_text_seq("WITH", "SNAPSHOT", "RETENTION"):
            number = self._parse_ref_number()
            if self._match_text_seq("SNAPSHOTS"):
                args["min_snapshots"] = number
                number = self._parse_number()
            if number is not None:
                args["max_snapshot_age"] = (number, self._parse_time_unit())
        if self._curr is not None and self._curr.token_type not in (TokenType.SEMICOLON, TokenType.SENTINEL):
            self.raise_error(f"Unexpected {self._curr.text!r} in {kind} options")
        return self.expression(RefAction(**args))

    def _parse_ref_number(self) -> exp.Expr:
        number = self._parse_number()
        if number is None:
            self.raise_error("Expecting a number")
        return number  # type: ignore[return-value]

    def _parse_time_unit(self) -> str:
        if not self._match_texts(_TIME_UNITS):
            self.raise_error("Expecting DAYS, HOURS or MINUTES")
        return self._prev.text.upper()

    def _parse_identifier_fields(self, drop: bool) -> IdentifierFields | None:
        if not self._match_text_seq("IDENTIFIER", "FIELDS"):
            return None
        return self.expression(IdentifierFields(expressions=self._parse_csv(self._parse_column), drop=drop))

    def _parse_drop_ref(self) -> DropRef | None:
        if not self._match_texts(_REF_KINDS):
            return None
        kind = self._prev.text.upper()
        exists = self._parse_exists()
        name = self._parse_id_var(any_token=True)
        if name is None:
            self.raise_error(f"Expecting a {kind.lower()} name")
        return self.expression(DropRef(this=name, kind=kind, exists=bool(exists)))

    def _parse_alter_table_alter(self) -> exp.Expr | None:
        self._match(TokenType.COLUMN)
        column = self._parse_column()
        if column is None:
            return None
        args: dict[str, object] = {"this": column}
        if self._match_text_seq("TYPE"):
            args["dtype"] = self._parse_types()
        elif self._match(TokenType.COMMENT):
            args["comment"] = self._parse_string()
        elif self._match_text_seq("SET", "NOT", "NULL"):
            args["not_null"] = exp.true()
        elif self._match_text_seq("DROP", "NOT", "NULL"):
            args["not_null"] = exp.false()
        elif self._match_text_seq("SET", "DEFAULT"):
            args["default"] = self._parse_disjunction()
        elif self._match_text_seq("DROP", "DEFAULT"):
            args["drop_default"] = True
        elif self._match_text_seq("FIRST"):
            args["position"] = exp.ColumnPosition(position="FIRST")
        elif self._match_text_seq("AFTER"):
            args["position"] = exp.ColumnPosition(this=self._parse_column(), position="AFTER")
        else:
            return None
        return self.expression(AlterColumnAction(**args))

    # UPDATE and DELETE as Spark's grammar has them. sqlglot takes SET/WHERE in any order, an
    # empty or doubled-comma SET list, a dangling AS and DELETE ... ORDER BY/LIMIT (which it then
    # ignores): a truncated or misordered statement would run as a different, wider one.
    def _parse_update(self) -> exp.Update:
        this = self._parse_table(joins=True, alias_tokens=self.UPDATE_ALIAS_TOKENS)
        self._no_dangling_as()
        if not self._match(TokenType.SET):
            self.raise_error("Expecting SET")
        update = exp.Update(this=this, expressions=self._parse_assignments())
        if self._match(TokenType.WHERE, advance=False):
            update.set("where", self._parse_where())
        return self.expression(update)

    def _parse_delete(self) -> exp.Delete:
        if not self._match(TokenType.FROM):
            self.raise_error("Expecting FROM")
        this = self._parse_table(joins=True)
        self._no_dangling_as()
        return self.expression(exp.Delete(this=this, where=self._parse_where()))

    def _parse_assignments(self) -> list[exp.Expr]:
        items = []
        while True:
            item = self._parse_update_assignment()
            if item is None:
                self.raise_error("Expecting an assignment: column = value")
            items.append(item)
            if not self._match(TokenType.COMMA):
                return items

    def _parse_derived_table_values(self, allow_value_synonym: bool = False) -> exp.Values | None:
        values = super()._parse_derived_table_values(allow_value_synonym)
        if values is not None and self._prev is not None and self._prev.token_type == TokenType.COMMA:
            self.raise_error("Expecting a row after ','")  # a cut-off VALUES list must not insert part
        return values

    def _no_dangling_as(self) -> None:
        if self._prev is not None and self._prev.token_type == TokenType.ALIAS:
            self.raise_error("Expecting an alias after AS")

    def _parse_merge(self) -> exp.Merge:
        """MERGE [WITH SCHEMA EVOLUTION] INTO (Spark 4.1's form): the flag lands in the node's meta."""
        evolve = self._match_text_seq("WITH", "SCHEMA", "EVOLUTION")
        merge = super()._parse_merge()
        if evolve:
            merge.meta[SCHEMA_EVOLUTION_META] = True
        return merge

    def _parse_when_matched(self) -> exp.Whens:
        """Spark's MERGE clauses, strictly: each kind of clause allows only its own actions."""
        whens = []
        kinds = ("WHEN MATCHED", "WHEN NOT MATCHED", "WHEN NOT MATCHED BY SOURCE")
        last = 0
        while self._match(TokenType.WHEN):
            start = self._prev
            matched = not self._match(TokenType.NOT)
            if not self._match_text_seq("MATCHED"):
                self.raise_error("Expecting MATCHED")
            by_source = False
            if not matched and self._match_text_seq("BY", "SOURCE"):
                by_source = True
            elif not matched:
                self._match_text_seq("BY", "TARGET")
            kind = 0 if matched else 2 if by_source else 1
            if kind < last:  # Spark's grammar: matched*, then not matched*, then not matched by source*
                self.raise_error(f"{kinds[kind]} clauses must come before {kinds[last]} clauses", start)
            last = kind
            condition = self._parse_disjunction() if self._match(TokenType.AND) else None
            if not self._match(TokenType.THEN):
                self.raise_error("Expecting THEN")
            then = self._parse_merge_action(matched, by_source)
            whens.append(self.expression(
                exp.When(matched=matched, source=by_source, condition=condition, then=then),
                token=start,
            ))
        return self.expression(exp.Whens(expressions=whens))

    def _parse_merge_action(self, matched: bool, by_source: bool) -> exp.Expr | None:
        token = self._curr
        if self._match(TokenType.DELETE):
            if not (matched or by_source):
                self._merge_action_error(token, "DELETE", "WHEN NOT MATCHED")
            return exp.var("DELETE")
        if self._match(TokenType.UPDATE):
            if not (matched or by_source):
                self._merge_action_error(token, "UPDATE", "WHEN NOT MATCHED")
            if not self._match(TokenType.SET):
                self.raise_error("Expecting SET")
            if self._match(TokenType.STAR):
                if by_source:
                    self._merge_action_error(self._prev, "UPDATE SET *", "WHEN NOT MATCHED BY SOURCE")
                return self.expression(exp.Update(expressions=[exp.Star()]))
            return self.expression(exp.Update(expressions=self._parse_assignments()))
        if self._match(TokenType.INSERT):
            if matched or by_source:
                where = "WHEN MATCHED" if matched else "WHEN NOT MATCHED BY SOURCE"
                self._merge_action_error(token, "INSERT", where)
            if self._match(TokenType.STAR):
                return self.expression(exp.Insert(this=exp.Star()))
            columns = self._parse_wrapped_csv(self._parse_column)
            if not self._match_text_seq("VALUES"):
                self.raise_error("Expecting VALUES")
            return self.expression(exp.Insert(this=exp.Tuple(expressions=columns),
                                              expression=self._parse_value()))
        self.raise_error("Expecting UPDATE, DELETE or INSERT")
        return None

    def _merge_action_error(self, token: Token | None, action: str, clause: str) -> None:
        self.raise_error(f"{action} is not allowed in {clause}", token)  # type: ignore[arg-type]


class PyIceSpark(Spark):
    """The dialect every statement is parsed with."""

    class Tokenizer(Spark.Tokenizer):
        # CALL and EXPLAIN are COMMAND keywords in sqlglot, which makes the tokenizer turn the
        # rest of the statement into one string; as plain words the parser sees real tokens.
        KEYWORDS = {k: v for k, v in Spark.Tokenizer.KEYWORDS.items() if k not in ("CALL", "EXPLAIN")}
        COMMANDS = Spark.Tokenizer.COMMANDS - {TokenType.SHOW}

    class Generator(Spark.Generator):
        """Spark's generator, but for what it writes as something else than Spark reads:
        to_char(x, format) as CAST(x AS STRING); percentile_cont / percentile_disc(q) WITHIN
        GROUP (ORDER BY v) as percentile_approx(v, q), without the order's direction; and of
        Spark 4: instr(s, sub, pos, occurrence) without its occurrence, listagg(x) with a ','
        separator (Spark's default is none), max_by / min_by(x, y, n) without n, parse_json(s)
        as s and a cast of it as from_json (a variant cast reads '"1"' as 1, from_json as NULL),
        the TIME type as TIMESTAMP and a TIME literal as a cast (Spark 4.3 takes TIME literals
        but no TIME casts). Each is written here as the user wrote it."""

        PARSE_JSON_NAME = "PARSE_JSON"
        TYPE_MAPPING = {**Spark.Generator.TYPE_MAPPING, exp.DType.TIME: "TIME"}
        TRANSFORMS = {
            **{k: v for k, v in Spark.Generator.TRANSFORMS.items() if k is not exp.WithinGroup},
            exp.ToChar: lambda self, e: self.func("TO_CHAR", e.this, e.args.get("format")),
            exp.GroupConcat: lambda self, e: groupconcat_sql(self, e, sep=None),
            exp.ArgMax: lambda self, e: self.func("MAX_BY", e.this, e.expression, e.args.get("count")),
            exp.ArgMin: lambda self, e: self.func("MIN_BY", e.this, e.expression, e.args.get("count")),
            exp.StrPosition: lambda self, e: (
                self.func("INSTR", e.this, e.args["substr"], e.args.get("position"), e.args["occurrence"])
                if e.args.get("occurrence") else Spark.Generator.TRANSFORMS[exp.StrPosition](self, e)),
        }

        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            if type(expression) is exp.Cast and expression.this.is_string and expression.to.is_type(exp.DType.TIME):
                return f"TIME {self.sql(expression, 'this')}"  # TIME '...', which sqlglot reads as a Cast
            if isinstance(expression.this, exp.ParseJSON):  # Spark's writer: from_json(s, type), another cast
                return BaseGenerator.cast_sql(self, expression, safe_prefix=safe_prefix)
            return super().cast_sql(expression, safe_prefix=safe_prefix)

    Parser = PyIceSparkParser


DIALECT = PyIceSpark()  # the one dialect instance the parser, procedure arguments and generated SQL use


def quote_identifier(name: str) -> str:
    """`name` as one Spark SQL identifier: backquoted, inner backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"
