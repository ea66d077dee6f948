package pyice.shim;

import java.io.Serializable;

import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A per-row predicate of the shim as a Spark function, registered through {@link ShimFunctions}: bound as it is,
 * never null. Spark's generated code calls the subclass's {@code invoke} method with primitive arguments of
 * {@code inputTypes}.
 */
public abstract class RowPredicate implements UnboundFunction, ScalarFunction<Boolean>, Serializable {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final String description;
    private final DataType[] inputTypes;

    /** {@code description} as Spark's {@code DESCRIBE FUNCTION} shows it: the call, then what it is true for. */
    protected RowPredicate(String name, String description, DataType... inputTypes) {
        this.name = name;
        this.description = description;
        this.inputTypes = inputTypes;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public DataType[] inputTypes() {
        return inputTypes.clone();
    }

    @Override
    public BoundFunction bind(StructType inputType) {
        return this;
    }

    @Override
    public DataType resultType() {
        return DataTypes.BooleanType;
    }

    @Override
    public boolean isResultNullable() {
        return false;
    }
}
