package pyice.shim;

import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Projections built in the JVM in one call: from Python, each column of them would cost several py4j round trips
 * (pyice_sql/spark/frames.py).
 */
public final class Frames {
    private Frames() {}

    /**
     * The columns of {@code df} that the fields of {@code schemaJson} (a Spark StructType as JSON) name, in that
     * order, each renamed to its field's name and given its field's metadata (the Iceberg field id Spark writes
     * into Parquet). Types are left as they are: the caller has checked that they match.
     */
    public static Dataset<Row> withFieldMetadata(Dataset<Row> df, String schemaJson) {
        StructField[] fields = ((StructType) DataType.fromJson(schemaJson)).fields();
        Column[] columns = new Column[fields.length];
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            columns[i] = functions.col("`" + name.replace("`", "``") + "`").as(name, fields[i].metadata());
        }
        return df.select(columns);
    }

    /**
     * {@code df.selectExpr(exprs)} followed by the columns {@code extra}, as one projection: every Dataset
     * operation is an analysis of the whole plan on the driver, and a row-level statement's plan grows with each.
     */
    public static Dataset<Row> selectWith(Dataset<Row> df, List<String> exprs, List<Column> extra) {
        Column[] columns = new Column[exprs.size() + extra.size()];
        for (int i = 0; i < exprs.size(); i++) {
            columns[i] = functions.expr(exprs.get(i));
        }
        for (int i = 0; i < extra.size(); i++) {
            columns[exprs.size() + i] = extra.get(i);
        }
        return df.select(columns);
    }
}
