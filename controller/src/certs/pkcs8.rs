//! Wrapping an RSA private key in PKCS#1 DER (`RSA PRIVATE KEY`, as the rotator writes
//! `ca.key`) into a PKCS#8 `PrivateKeyInfo`, the form the signing library reads.

/// `AlgorithmIdentifier { rsaEncryption, NULL }`.
const RSA_ENCRYPTION: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];
/// `version INTEGER 0`.
const VERSION_0: [u8; 3] = [0x02, 0x01, 0x00];

pub fn from_rsa_pkcs1(pkcs1: &[u8]) -> Vec<u8> {
    let key = tlv(0x04, pkcs1);
    let body = [&VERSION_0[..], &RSA_ENCRYPTION[..], &key].concat();
    tlv(0x30, &body)
}

/// A DER tag-length-value with a definite length.
fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
    let len = value.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(value);
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::tlv;

    #[rstest]
    #[case::short(3, vec![0x04, 0x03])]
    #[case::one_length_byte(200, vec![0x04, 0x81, 200])]
    #[case::two_length_bytes(1190, vec![0x04, 0x82, 0x04, 0xa6])]
    fn lengths_are_definite_and_minimal(#[case] len: usize, #[case] header: Vec<u8>) {
        let encoded = tlv(0x04, &vec![0; len]);
        assert_eq!(encoded[..header.len()], header[..]);
        assert_eq!(encoded.len(), header.len() + len);
    }
}
