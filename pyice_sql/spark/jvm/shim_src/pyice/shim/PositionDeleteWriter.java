package pyice.shim;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Types;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskFailureListener;

/**
 * Merge-on-read position delete files written by the tasks that hold their rows, as Iceberg Java's delta writer
 * does: one file per data file, its positions (this statement's, merged with the file's previous ones when they
 * are folded) streamed in order into Parquet, and the file's footer summary ({@link FooterStats}) handed back to
 * the driver. So the write needs no second sort of the folded rows, no staging folder to list, no footers to read
 * again and no files to move.
 *
 * <p>The rows are {@code (key, pos)}: the data file's 64-bit key and a position, partitioned by key and sorted by
 * key and position, each position once. The targets spec ({@link Shipped}) maps each key to the file to write and
 * the data file's path as manifests spell it (written as {@code file_path}), records separated by U+0000 and
 * fields by U+0001: key, output path, data file path. So the rows hold no string: the tasks convert no path per
 * row, and a task's rows need none of the reflection-built conversions Spark gives string columns (on a fresh
 * executor, initializing Scala reflection for them cost ~1.5 s, measured). The file name is fixed per data file,
 * so a retried task overwrites what a failed attempt left.
 *
 * <p>{@link #along} writes the same files from inside another job instead: the merge-on-read write of an UPDATE or
 * a MERGE, where the rows that carry a deleted position also carry the new row's values, and inserted rows (which
 * delete nothing) come along. A filter before the data file write ({@link AlongDeletes}) takes each row's position
 * as the row goes by and passes on the rows that carry a new row, as Iceberg Java's delta writer writes both from
 * one task: one write job instead of two. The rows stay Spark's internal rows: a {@code mapPartitions} over
 * {@code Row}s converted every changed row twice, and on a fresh executor its generated conversions initialized
 * Scala reflection (~1.5 s, once per executor JVM, measured on {@code local-cluster}).
 *
 * <p>On a format v3 table ({@link #writeVectors}, {@link #alongVectors}) each data file gets a deletion vector
 * instead: the same rows, grouping and folding (a DV holds every deleted position of its file), but the task hands
 * back the serialized blob in place of a footer, and the driver writes the statement's blobs as one Puffin file.
 */
public final class PositionDeleteWriter implements MapPartitionsFunction<Row, String> {
    private static final long serialVersionUID = 1L;
    private static final String RECORD = "\u0000";
    private static final String FIELD = "\u0001";
    static final MessageType SCHEMA = Types.buildMessage()
        .required(PrimitiveTypeName.BINARY).as(LogicalTypeAnnotation.stringType()).id(2147483546).named("file_path")
        .required(PrimitiveTypeName.INT64).id(2147483545).named("pos")
        .named("table");

    /** The zstd level's conf key (its codec cache is keyed by it from parquet-mr 1.14 on). */
    private static final String ZSTD_LEVEL = "parquet.compression.codec.zstd.level";

    /** The Parquet settings {@link #write}'s {@code layout} takes. */
    private static final Set<String> LAYOUT = new HashSet<>(Arrays.asList(
        "parquet.block.size", "parquet.page.size", "parquet.page.row.count.limit", "parquet.dictionary.page.size",
        ZSTD_LEVEL));

    /** Parsed targets specs on this JVM by their id. */
    private static final Map<Long, Map<Long, String[]>> PARSED = RecentSpecs.create(8);

    private final Shipped targets;
    private final Broadcast<byte[]> conf;
    private final DeleteLoader previous;  // null: nothing to fold
    private final String codec;  // null: deletion vector blobs, not Parquet files (format v3)
    private final HashMap<String, String> layout;  // parquet-mr's settings by their Hadoop names; unset: its defaults

    private PositionDeleteWriter(Shipped targets, Broadcast<byte[]> conf, DeleteLoader previous,
                                 String codec, HashMap<String, String> layout) {
        this.targets = targets;
        this.conf = conf;
        this.previous = previous;
        this.codec = codec;
        this.layout = layout;
    }

    /**
     * Writes the delete files of {@code rows} (see the class comment) and returns their footer summaries as a
     * JSON array. {@code previousSpec} ({@link DeleteLoader}, keyed like the rows; null when nothing is folded)
     * names the delete files whose positions each data file's new file takes over; {@code codec} is a Parquet
     * compression codec name ({@code zstd}, {@code snappy}, {@code gzip}, {@code uncompressed}, ...), or null for
     * deletion vector blobs ({@link #writeVectors}); {@code layout} (null: none) sets the files' row group, page and
     * dictionary sizes and page row limit by parquet-mr's Hadoop names ({@code parquet.block.size},
     * {@code parquet.page.size}, {@code parquet.dictionary.page.size}, {@code parquet.page.row.count.limit}) and
     * the zstd level ({@code parquet.compression.codec.zstd.level}), as Iceberg's {@code write.delete.parquet.*}
     * properties do.
     */
    public static String write(Dataset<Row> rows, String targets, String previousSpec, Configuration conf,
                               String codec, Map<String, String> layout) throws IOException {
        PositionDeleteWriter writer = ship(rows, targets, previousSpec, conf, codec, layout);
        List<String> out = rows.mapPartitions(writer, Summaries.ENCODER).collectAsList();
        return "[" + String.join(",", out) + "]";
    }

    /**
     * The encoder of the tasks' summaries, built once on the driver ({@code Encoders.STRING()} builds a new one by
     * Scala reflection on each call, 2-3 ms); a holder, so that the executors that load this class never build it.
     */
    private static final class Summaries {
        static final Encoder<String> ENCODER = Encoders.STRING();
    }

    /**
     * {@link #write} for a format v3 table: each data file's positions, merged with all its previous deletes, as a
     * {@code deletion-vector-v1} blob ({@link DeletionVectors}) instead of a Parquet file. Returns a JSON array of
     * {@code {"dataFile", "cardinality", "blob"}} (the blob in base64), which the driver writes as one Puffin file;
     * the targets spec's output paths are not used.
     */
    public static String writeVectors(Dataset<Row> rows, String targets, String previousSpec, Configuration conf)
        throws IOException {
        return write(rows, targets, previousSpec, conf, null, null);
    }

    /** {@link #along} for a format v3 table: the tasks leave deletion vector blobs as {@link #writeVectors} returns. */
    public static Along alongVectors(Dataset<Row> rows, String targets, String previousSpec, Configuration conf,
                                     String onRepeat) throws IOException {
        return along(rows, targets, previousSpec, conf, null, null, onRepeat);
    }

    /**
     * The rows of {@code rows} that carry a new row, to hand to the data file write, whose tasks then write the
     * delete files as a side effect. {@code rows} are {@code (key, pos, deletes, emits, ...)}, partitioned
     * and sorted as for {@link #write}: {@code deletes} says the row's position is deleted, {@code emits} that the
     * row goes on (all its columns); a row that goes on and deletes nothing is an inserted row, with no key or
     * position; a row that does neither (a MERGE's matched pair kept for its cardinality check) has both. A
     * position's second row (its target row in a second matched pair) fails the task with {@code onRepeat} as
     * its message, or, where that is null, is dropped: the position was changed once already. Read the footer
     * summaries with {@link #summaries} and the rows' counts with {@link #counts} once that job has run.
     */
    public static Along along(Dataset<Row> rows, String targets, String previousSpec, Configuration conf,
                              String codec, Map<String, String> layout, String onRepeat) throws IOException {
        SparkSession spark = rows.sparkSession();
        CollectionAccumulator<String> written = spark.sparkContext().collectionAccumulator("pyice deletes");
        LongAccumulator[] counts = new LongAccumulator[COUNTED.length];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = spark.sparkContext().longAccumulator("pyice " + COUNTED[i]);
        }
        AlongDeletes deletes = ship(rows, targets, previousSpec, conf, codec, layout)
            .new AlongDeletes(written, counts, onRepeat);
        String[] names = rows.columns();
        Column[] args = new Column[4];
        for (int i = 0; i < args.length; i++) {  // an inserted row has no key or position: it deletes nothing
            args[i] = functions.coalesce(functions.col("`" + names[i].replace("`", "``") + "`"),
                                         functions.lit(i < 2 ? (Object) 0L : (Object) false));
        }
        String name = ShimFunctions.register(spark, deletes);
        Column goesOn = name != null ? functions.call_function(name, args)
            : functions.udf(deletes.new AsUdf(), DataTypes.BooleanType).asNondeterministic().apply(args);
        return new Along(rows.where(goesOn), written, counts);
    }

    /** The footer summaries, a JSON array, of the delete files that the tasks of {@code along}'s job wrote. */
    public static String summaries(Along along) {
        return "[" + String.join(",", along.written.value()) + "]";
    }

    /**
     * The rows that went by {@code along}'s filter in the tasks of its job, as a JSON object of {@link #COUNTED}:
     * a row that deletes a position and goes on updated its target row, one that only deletes deleted it, one
     * that only goes on is inserted (rows that do neither, a MERGE's matched pairs kept for its cardinality
     * check, are not counted), a position's second row neither: each changed target row is counted once. Counted
     * by tasks that succeeded only, as an observation is.
     */
    public static String counts(Along along) {
        StringBuilder out = new StringBuilder("{");
        for (int i = 0; i < COUNTED.length; i++) {
            out.append(i == 0 ? "" : ",").append('"').append(COUNTED[i]).append("\":").append(along.counts[i].sum());
        }
        return out.append('}').toString();
    }

    /** The counts of {@link #counts}, in the order of {@link AlongDeletes}' accumulators. */
    private static final String[] COUNTED = {"updated", "deleted", "inserted"};

    /** What {@link #along} returns: the rows going on, and where their tasks leave their delete files' summaries. */
    public static final class Along {
        private final Dataset<Row> rows;
        private final CollectionAccumulator<String> written;
        private final LongAccumulator[] counts;

        Along(Dataset<Row> rows, CollectionAccumulator<String> written, LongAccumulator[] counts) {
            this.rows = rows;
            this.written = written;
            this.counts = counts;
        }

        public Dataset<Row> rows() {
            return rows;
        }
    }

    private static PositionDeleteWriter ship(Dataset<Row> rows, String targets, String previousSpec,
                                             Configuration conf, String codec, Map<String, String> layout)
        throws IOException {
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(rows.sparkSession().sparkContext());
        if (codec != null) {
            CompressionCodecName.fromConf(codec);  // an unknown codec fails here, not in the tasks
        }
        Shipped shipped = Shipped.of(jsc, targets);
        PARSED.put(shipped.id(), parse(targets));
        DeleteLoader loader = previousSpec == null ? null : DeleteLoader.ship(rows.sparkSession(), previousSpec, conf);
        HashMap<String, String> settings = layout == null ? new HashMap<>() : new HashMap<>(layout);
        for (Map.Entry<String, String> e : settings.entrySet()) {
            long value = Long.parseLong(e.getValue());  // fails here, not in the tasks
            if (!LAYOUT.contains(e.getKey()) || (value < 1 && !e.getKey().equals(ZSTD_LEVEL))) {
                throw new IllegalArgumentException("not a Parquet layout setting: " + e.getKey() + " = " + e.getValue());
            }
        }
        return new PositionDeleteWriter(shipped, FooterStats.ship(jsc, conf), loader, codec, settings);
    }

    /** Key -> {output path, data file path}. */
    private static Map<Long, String[]> parse(String spec) {
        Map<Long, String[]> byKey = new HashMap<>();
        for (String record : spec.split(RECORD, -1)) {
            if (!record.isEmpty()) {
                String[] fields = record.split(FIELD, -1);
                byKey.put(Long.parseLong(fields[0]), new String[] {fields[1], fields[2]});
            }
        }
        return byKey;
    }

    private Map<Long, String[]> outputs() {
        return PARSED.computeIfAbsent(targets.id(), id -> parse(targets.value()));
    }

    @Override
    public Iterator<String> call(Iterator<Row> rows) throws IOException {
        Map<Long, String[]> outputs = outputs();
        Configuration hadoopConf = FooterStats.fromBroadcast(conf);
        List<String> out = new ArrayList<>();
        Set<Long> done = new HashSet<>();
        long key = 0;
        boolean any = false;
        LongList positions = new LongList();
        while (rows.hasNext()) {
            Row row = rows.next();
            if (any && row.getLong(0) != key) {
                out.add(writeFile(outputs, hadoopConf, done, key, positions.toArray()));
                positions = new LongList();
            }
            key = row.getLong(0);
            any = true;
            positions.add(row.getLong(1));
        }
        if (any) {
            out.add(writeFile(outputs, hadoopConf, done, key, positions.toArray()));
        }
        return out.iterator();
    }

    /**
     * Writes one data file's delete file. {@code done}: the keys this task wrote already; the rows of a data file
     * must come together and in position order (a shuffle by key and a sort, or a scan that reads each file whole
     * in one task), or the task fails rather than write a file twice or out of order.
     */
    private String writeFile(Map<Long, String[]> outputs, Configuration hadoopConf, Set<Long> done, long key,
                             long[] fresh) throws IOException {
        String[] target = outputs.get(key);
        if (target == null) {
            throw new IOException("no delete file planned for the data file of key " + key);
        }
        String output = target[0];
        String dataFile = target[1];
        if (!done.add(key)) {
            throw new IllegalStateException("the deleted positions of data file " + dataFile + " came apart in a task");
        }
        for (int i = 1; i < fresh.length; i++) {
            if (fresh[i] <= fresh[i - 1]) {
                throw new IllegalStateException("deleted positions of data file " + dataFile + " out of order: "
                    + fresh[i - 1] + " then " + fresh[i]);
            }
        }
        long[] positions = previous == null ? fresh : merge(fresh, previous.positions(key));
        if (codec == null) {
            return vector(dataFile, positions);
        }
        Path path = new Path(output);
        String level = layout.get(ZSTD_LEVEL);
        Configuration writeConf = hadoopConf;
        if (level != null) {  // a copy: the conf is this JVM's, shared by every write of the broadcast
            writeConf = new Configuration(hadoopConf);
            writeConf.set(ZSTD_LEVEL, level);
        }
        Builder builder = new Builder(LocalOutputFile.of(path, hadoopConf), Binary.fromString(dataFile))
            .withConf(writeConf)
            .withCompressionCodec(CompressionCodecName.fromConf(codec))
            .withWriteMode(ParquetFileWriter.Mode.OVERWRITE);
        String size;
        if ((size = layout.get("parquet.block.size")) != null) {
            builder.withRowGroupSize(Long.parseLong(size));
        }
        if ((size = layout.get("parquet.page.size")) != null) {
            builder.withPageSize(Integer.parseInt(size));
        }
        if ((size = layout.get("parquet.page.row.count.limit")) != null) {
            builder.withPageRowCountLimit(Integer.parseInt(size));
        }
        if ((size = layout.get("parquet.dictionary.page.size")) != null) {
            builder.withDictionaryPageSize(Integer.parseInt(size));
        }
        ParquetWriter<Long> writer = builder.build();
        try {
            for (long p : positions) {
                writer.write(p);
            }
        } finally {
            writer.close();
        }
        long length = path.getFileSystem(hadoopConf).getFileStatus(path).getLen();
        return FooterStats.summary(output, length, writer.getFooter());
    }

    /** One data file's deletion vector blob as {@link #writeVectors} returns it; {@code positions} sorted. */
    private static String vector(String dataFile, long[] positions) {
        long cardinality = 0;
        for (int i = 0; i < positions.length; i++) {
            cardinality += i == 0 || positions[i] != positions[i - 1] ? 1 : 0;
        }
        StringBuilder out = new StringBuilder("{");
        Json.str(Json.key(out, "dataFile"), dataFile).append(',');
        Json.key(out, "cardinality").append(cardinality).append(',');
        Json.key(out, "blob").append('"')
            .append(Base64.getEncoder().encodeToString(DeletionVectors.serialize(positions))).append('"');
        return out.append('}').toString();
    }

    /**
     * {@link #along}'s filter, one instance per task: collects each data file's deleted positions as its rows go by
     * and writes its delete file when the next data file's rows begin, the last one when the task completes (after
     * the data file write of the same task has committed: a failure there fails the task, and its retry writes the
     * same file names again). Not deterministic, so Spark neither moves nor repeats it.
     */
    public final class AlongDeletes extends RowPredicate {
        private static final long serialVersionUID = 1L;
        private final CollectionAccumulator<String> written;
        private final LongAccumulator[] counts;  // updated, deleted, inserted: added once per task
        private final String onRepeat;  // null: a position's second row is dropped
        private transient long[] counted;
        private transient boolean positioned;  // a row with a position went by: the last one is below
        private transient long lastKey;
        private transient long lastPos;
        private transient boolean started;
        private transient boolean failed;
        private transient Map<Long, String[]> outputs;
        private transient Configuration hadoopConf;
        private transient long key;
        private transient boolean any;  // positions of a data file since the last flush
        private transient LongList positions;
        private transient Set<Long> keysWritten;

        AlongDeletes(CollectionAccumulator<String> written, LongAccumulator[] counts, String onRepeat) {
            super("along_deletes", "along_deletes(file key, row position, deletes, emits): writes the task's delete "
                  + "files, keeps the rows that go on", DataTypes.LongType, DataTypes.LongType, DataTypes.BooleanType,
                  DataTypes.BooleanType);
            this.written = written;
            this.counts = counts;
            this.onRepeat = onRepeat;
        }

        /** Whether the row goes on to the data file write, called by Spark's generated code. */
        public boolean invoke(long rowKey, long pos, boolean deletes, boolean emits) {
            if (!started) {
                start();
            }
            if (deletes || !emits) {  // not an inserted row: it has a position, its rows are in position order
                if (positioned && rowKey == lastKey && pos == lastPos) {
                    if (onRepeat != null) {
                        throw new IllegalStateException(onRepeat);
                    }
                    return false;
                }
                positioned = true;
                lastKey = rowKey;
                lastPos = pos;
            }
            if (deletes || emits) {  // updated, deleted, inserted (COUNTED's order)
                counted[deletes ? (emits ? 0 : 1) : 2]++;
            }
            if (deletes) {
                if (any && rowKey != key) {
                    flush();
                }
                key = rowKey;
                any = true;
                positions.add(pos);
            }
            return emits;
        }

        private void start() {
            started = true;
            outputs = outputs();
            try {
                hadoopConf = FooterStats.fromBroadcast(conf);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            positions = new LongList();
            counted = new long[counts.length];
            keysWritten = new HashSet<>();
            TaskContext task = TaskContext.get();
            if (task == null) {
                throw new IllegalStateException("the delete writer runs inside Spark tasks only");
            }
            task.addTaskFailureListener(new TaskFailureListener() {
                @Override
                public void onTaskFailure(TaskContext context, Throwable error) {
                    failed = true;
                }
            });
            task.addTaskCompletionListener(new TaskCompletionListener() {
                @Override
                public void onTaskCompletion(TaskContext context) {
                    if (!failed) {
                        flush();
                        for (int i = 0; i < counts.length; i++) {
                            counts[i].add(counted[i]);
                        }
                    }
                }
            });
        }

        private void flush() {
            if (!any) {
                return;
            }
            try {
                written.add(writeFile(outputs, hadoopConf, keysWritten, key, positions.toArray()));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            any = false;
            positions = new LongList();
        }

        @Override
        public boolean isDeterministic() {
            return false;
        }

        /** The filter as a UDF, where {@link ShimFunctions} cannot be loaded by Spark. */
        private final class AsUdf implements UDF4<Long, Long, Boolean, Boolean, Boolean> {
            private static final long serialVersionUID = 1L;

            @Override
            public Boolean call(Long rowKey, Long pos, Boolean deletes, Boolean emits) {
                return invoke(rowKey, pos, deletes, emits);
            }
        }
    }

    /** The union of two sorted arrays, in order (they are disjoint: the statement changed live rows only). */
    static long[] merge(long[] a, long[] b) {
        if (b.length == 0) {
            return a;
        }
        long[] out = new long[a.length + b.length];
        int i = 0;
        int j = 0;
        int n = 0;
        while (i < a.length || j < b.length) {
            out[n++] = j >= b.length || (i < a.length && a[i] <= b[j]) ? a[i++] : b[j++];
        }
        return out;
    }

    private static final class Builder extends ParquetWriter.Builder<Long, Builder> {
        private final Binary dataFile;

        Builder(OutputFile file, Binary dataFile) {
            super(file);
            this.dataFile = dataFile;
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        protected WriteSupport<Long> getWriteSupport(Configuration conf) {
            return new Positions(dataFile);
        }
    }

    /** Writes one {@code (file_path, pos)} record per position, the path the same for all. */
    private static final class Positions extends WriteSupport<Long> {
        private final Binary dataFile;
        private RecordConsumer consumer;

        Positions(Binary dataFile) {
            this.dataFile = dataFile;
        }

        @Override
        public WriteContext init(Configuration configuration) {
            return new WriteContext(SCHEMA, Collections.emptyMap());
        }

        @Override
        public void prepareForWrite(RecordConsumer recordConsumer) {
            consumer = recordConsumer;
        }

        @Override
        public void write(Long pos) {
            consumer.startMessage();
            consumer.startField("file_path", 0);
            consumer.addBinary(dataFile);
            consumer.endField("file_path", 0);
            consumer.startField("pos", 1);
            consumer.addLong(pos);
            consumer.endField("pos", 1);
            consumer.endMessage();
        }
    }
}
