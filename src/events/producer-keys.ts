/**
 * The keys real producers put in predictions that the store's shapes have no field for
 * (docs/API.md, "Producers' keys"): a create accepts them without a warning and does not store
 * them, since the contract's shapes (docs/API.md, "Shapes inside an image entry") have no field
 * for any of them. Each list is the producers' own, read from their sources:
 *
 * - roboflow/inference, `inference/core/entities/responses/inference.py` (the HTTP answers'
 *   predictions): `ObjectDetectionPrediction` and `KeypointsPrediction` carry `class_id`,
 *   `class_confidence`, `tracker_id`, `detection_id`, `parent_id`; `InstanceSegmentationPrediction`
 *   the same but `tracker_id`; `ClassificationPrediction` `class_id`; a `Keypoint` `class_id`,
 *   `class_name` and `confidence`.
 * - roboflow/inference, `inference/core/workflows/core_steps/common/serializers.py`
 *   (`serialise_sv_detections`, `serialise_rle_sv_detections`: a Workflow's `sv.Detections`, with
 *   the key names of `inference/core/workflows/execution_engine/constants.py`): on each prediction
 *   `class_id`, `tracker_id`, `detection_id`, `parent_id`, `root_parent_id`, `parent_origin`,
 *   `root_parent_origin`, `path_deviation`, `time_in_zone`, `polygon`, `rect`, `angle`, `data`,
 *   `velocity`, `speed`, `smoothed_velocity`, `smoothed_speed`, `area_px`, `area_converted`,
 *   `rle_mask`; on each keypoint `class_id`, `class`, `confidence`.
 * - roboflow/supervision, `supervision/detection/tools/json_sink.py` (`JSONSink.parse_detection_data`,
 *   a `Detections` row): `x_min`, `y_min`, `x_max`, `y_max`, `class_id`, `confidence`,
 *   `tracker_id`, then the keys of `Detections.data`, `class_name` among them (set by
 *   `Detections.from_inference` and `from_ultralytics`).
 *
 * Each key is taken in camelCase too (`trackerId`), as the store's own keys are.
 */

/** The keys of a detection, an instance segmentation or a keypoint group (object_detections[k], ...). */
const PREDICTION = [
  // inference's HTTP answers
  'class_id', 'class_confidence', 'tracker_id', 'detection_id', 'parent_id',
  // inference Workflows' sv.Detections
  'root_parent_id', 'parent_origin', 'root_parent_origin', 'path_deviation', 'time_in_zone', 'polygon', 'rect', 'angle', 'data',
  'velocity', 'speed', 'smoothed_velocity', 'smoothed_speed', 'area_px', 'area_converted', 'rle_mask',
  // supervision's JSONSink rows
  'x_min', 'y_min', 'x_max', 'y_max', 'class_name',
];

/** The keys of a classification (classifications[k]): inference's ClassificationPrediction. */
const CLASSIFICATION = ['class_id'];

/** The keys of a keypoint (keypoints[k].keypoints[p]): inference's Keypoint and its Workflows' serialiser. */
const KEYPOINT = ['class_id', 'class', 'class_name', 'confidence'];

const toCamel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const bothSpellings = (keys: string[]): readonly string[] => [...new Set(keys.flatMap((key) => [key, toCamel(key)]))];

/** Producers' keys by the level they come at (unknown-keys.ts), each in snake_case and camelCase. */
export const PRODUCER_KEYS = {
  prediction: bothSpellings(PREDICTION),
  classification: bothSpellings(CLASSIFICATION),
  keypoint: bothSpellings(KEYPOINT),
} as const;
