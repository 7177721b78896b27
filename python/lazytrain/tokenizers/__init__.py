"""Hugging Face's tokenizer classes over lazytrain's C++ tokenizers
(src/data/): BertTokenizer (WordPiece), GPT2Tokenizer (byte-level BPE),
XLMRobertaTokenizer (SentencePiece with RoBERTa's special tokens),
AutoTokenizer, and train_tokenizer (SentencePiece training, the CLI's
``train_tokenizer``)."""
from .tokenization_utils_base import BatchEncoding  # noqa: F401
from .tokenization_utils import PreTrainedTokenizer  # noqa: F401
from .tokenization_bert import BertTokenizer  # noqa: F401
from .tokenization_gpt2 import GPT2Tokenizer  # noqa: F401
from .tokenization_xlm_roberta import XLMRobertaTokenizer  # noqa: F401
from .tokenization_auto import AutoTokenizer  # noqa: F401
from .training import train_tokenizer  # noqa: F401
