package pyice.shim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's Parquet write support, as pyice_sql writes data files: rows are written by Spark's own code; two
 * additions, each when its option is in the write's configuration.
 * <ul>
 * <li>{@link #IDS}: the file schema's nodes get the Iceberg field ids it lists (ids do not change a column's
 * path). {@code path=id} entries separated by commas, each path the node's names in the file schema
 * ({@code %}, {@code /}, {@code ,} and {@code =} percent-encoded) joined by {@code /}:
 * {@code arr/list/element=7}. A node it does not name (the repeated {@code list} and {@code key_value} groups,
 * which Iceberg leaves without an id) keeps none. A write whose schema has a node that is neither named nor such
 * a group fails, so a file never carries a partial set.</li>
 * <li>{@link NanCounts#FIELDS}: the NaN values of the float and double columns it names are counted as rows are
 * written and kept in the file's footer ({@link NanCounts}), so each file has its own exact counts.</li>
 * </ul>
 */
public final class DataFileWriteSupport extends WriteSupport<InternalRow> {
    public static final String IDS = "pyice.parquet.field-ids";

    private final ParquetWriteSupport spark = new ParquetWriteSupport();
    private NanCounts nans;

    @Override
    public WriteContext init(Configuration conf) {
        WriteContext written = spark.init(conf);
        String nanFields = conf.get(NanCounts.FIELDS);
        if (nanFields != null) {
            StructType rows = (StructType) DataType.fromJson(conf.get(ParquetWriteSupport.SPARK_ROW_SCHEMA()));
            nans = new NanCounts(rows, parse(nanFields));
        }
        String ids = conf.get(IDS);
        MessageType schema = ids == null ? written.getSchema() : withIds(written.getSchema(), parse(ids));
        return new WriteContext(schema, written.getExtraMetaData());
    }

    @Override
    public void prepareForWrite(RecordConsumer consumer) {
        spark.prepareForWrite(consumer);
    }

    @Override
    public void write(InternalRow row) {
        spark.write(row);
        if (nans != null) {
            nans.add(row);
        }
    }

    @Override
    public String getName() {
        return spark.getName();
    }

    @Override
    public FinalizedWriteContext finalizeWrite() {
        FinalizedWriteContext written = spark.finalizeWrite();
        if (nans == null) {
            return written;
        }
        Map<String, String> extra = new HashMap<>(written.getExtraMetaData());
        extra.put(NanCounts.KEY, nans.metadata());
        return new FinalizedWriteContext(extra);
    }

    static MessageType withIds(MessageType schema, Map<String, Integer> ids) {
        return new MessageType(schema.getName(), children(schema, "", ids));
    }

    private static List<Type> children(GroupType group, String prefix, Map<String, Integer> ids) {
        List<Type> out = new ArrayList<>(group.getFieldCount());
        for (Type child : group.getFields()) {
            String path = prefix + encode(child.getName());
            Type withChildren = child.isPrimitive() ? child
                : child.asGroupType().withNewFields(children(child.asGroupType(), path + "/", ids));
            Integer id = ids.get(path);
            if (id != null) {
                out.add(withChildren.withId(id));
            } else if (child.isRepetition(Type.Repetition.REPEATED) && !child.isPrimitive()
                       && group.getLogicalTypeAnnotation() != null) {
                out.add(withChildren);  // a list's or map's repeated group: no id in Iceberg's files either
            } else {
                throw new IllegalStateException("no Iceberg field id for the Parquet column " + path
                                                + " (" + IDS + ")");
            }
        }
        return out;
    }

    /** The {@code path=id} entries of {@link #IDS} or {@link NanCounts#FIELDS}, paths as written (encoded). */
    static Map<String, Integer> parse(String entries) {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (String entry : entries.split(",")) {
            if (entry.isEmpty()) {
                continue;
            }
            int eq = entry.lastIndexOf('=');
            out.put(entry.substring(0, eq), Integer.valueOf(entry.substring(eq + 1)));
        }
        return out;
    }

    /** A name as {@link #IDS} spells it: the path separator and the entries' delimiters percent-encoded. */
    static String encode(String name) {
        StringBuilder sb = new StringBuilder(name.length());
        for (char c : name.toCharArray()) {
            if (c == '%' || c == '/' || c == ',' || c == '=') {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                  .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
