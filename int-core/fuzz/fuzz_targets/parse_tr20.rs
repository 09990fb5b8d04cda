//! Telemetry Report 2.0 datagrams on arbitrary bytes: no panic, and every
//! individual report read is read the same once written back (its inner
//! contents padded to a word); a report that reads as int-node's loss
//! report is exactly what its emitter writes.
#![no_main]

use int_core::report::tr20::{IndividualReport, Report, LENGTH_TO_END};
use int_core::report::tr20_loss::{self, LossReport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(report) = Report::parse(data) else { return };
    for individual in report.reports().flatten() {
        let mut out = vec![0u8; 4 + 8 + 4 * 255 + individual.inner.len() + 4 + 1024];
        let Ok(len) = individual.emit(&mut out) else { continue };
        let (again, used) = IndividualReport::parse(&out[..len], 0).expect("a written report reads back");
        assert_eq!(used, len);
        assert_eq!((again.rep_type, again.in_type, again.flags), (individual.rep_type, individual.in_type, individual.flags));
        // MD Length is ignored on reception for Inner Only reports.
        if individual.int.is_some() {
            assert_eq!(again.md_len_words, individual.md_len_words);
        }
        assert_eq!(again.int.map(|i| (i.rep_md_bits, i.domain_id, i.ds_md_bits, i.ds_md_status, i.metadata, i.drop)),
            individual.int.map(|i| (i.rep_md_bits, i.domain_id, i.ds_md_bits, i.ds_md_status, i.metadata, i.drop)));
        assert_eq!(&again.inner[..individual.inner.len()], individual.inner);
        if individual.report_len_words != LENGTH_TO_END {
            assert_eq!(again.report_len_words, individual.report_len_words);
        }
        if let Some(loss) = LossReport::parse(&individual, 0x4944) {
            let mut written = [0u8; tr20_loss::LEN];
            assert_eq!(loss.emit(0x4944, &mut written), Ok(tr20_loss::LEN));
            assert_eq!(&out[..len], &written[..], "a loss report reads only as its emitter writes it");
        }
    }
});
